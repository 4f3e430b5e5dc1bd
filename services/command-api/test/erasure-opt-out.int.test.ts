import { createDb, type Database } from '@leadline/runtime';
import { type RunningSequencer } from '@leadline/sequencer';
import { accountEvents, eventually, fakeClock, startFakeTwilio, type FakeTwilio } from '@leadline/test-kit';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { postInboundSms } from '../../../system-test/inbound-sms';
import { readModelSnapshot } from '../../../system-test/log';
import { startSystem, type TestSystem } from '../../../system-test/system';
import { outboxSettled, startTestSequencer } from '../../../system-test/workers';

/**
 * An opt-out outlives the erasure of the person who sent it (TCPA, CTIA): a number that texted STOP,
 * was erased, and comes back (imported one by one or in bulk, with the default sequence) gets nothing
 * but compliance replies until it texts START, and a rebuild from offset 0 keeps it so. Signed inbound
 * SMS, the inbound decider, the SMS gateway to the fake Twilio and the sequencer, on real infrastructure.
 */
// A Monday, 09:00 in Austin (the leads' area code): inside the sending window.
const clock = fakeClock(new Date(Date.UTC(2026, 2, 2, 15)));
let twilio: FakeTwilio;
let system: TestSystem;
let acme: PartnerClient;
let claimsDb: Kysely<Database>;
let sequencer: RunningSequencer;
let account: { id: string; number: string };

beforeAll(async () => {
  twilio = await startFakeTwilio();
  system = await startSystem({ clock, twilio, gateway: true });
  claimsDb = createDb(system.env.config.DATABASE_URL, { maxConnections: 4 });
  sequencer = await startTestSequencer(system, { db: claimsDb, clock });
  acme = partnerClient(system.app, await system.createPartner('Acme CRM'));
  const created = await acme.post('/accounts', {
    name: 'Sunrise',
    company_name: 'Sunrise Home Loans',
    consent_required: false,
  });
  account = { id: created.body.id, number: created.body.phone_number };
  const sequence = await acme.post(`/accounts/${account.id}/sequences`, {
    name: 'Welcome',
    is_default: true,
    steps: [{ type: 'fixed', message: 'Hi {{first_name|there}}, this is Sunrise Home Loans.' }],
  });
  expect(sequence.status).toBe(201);
}, 120_000);
afterAll(async () => {
  await sequencer?.stop();
  await system?.close();
  await claimsDb?.destroy();
  await twilio?.close();
});

let phones = 0;
const nextPhone = () => `+1512555${String(8100 + ++phones).padStart(4, '0')}`;
const path = (phone: string) => encodeURIComponent(phone);

/** An inbound SMS signed as Twilio signs it; returns once its decision is in the read models. */
async function inboundSms(from: string, body: string) {
  const response = await postInboundSms(system, { to: account.number, from, body }, twilio);
  expect(response.statusCode).toBe(200);
}

/**
 * What reached the fake Twilio for a phone, once what must have arrived has (`arrived`: a message
 * just decided may not be queued yet, so an empty queue alone could pass before it is) and the
 * gateway settled everything queued for it.
 */
async function sentTo(phone: string, arrived: (bodies: string[]) => boolean = () => true) {
  const bodies = () =>
    twilio.messages.filter((message) => message.to === phone).map((message) => message.body);
  await eventually(async () => (arrived(bodies()) ? true : undefined), { timeoutMs: 60_000 });
  await outboxSettled(system, phone);
  return bodies();
}

/** At least `count` confirmations whose text says `what`. */
const confirmations = (what: string, count: number) => (bodies: string[]) =>
  bodies.filter((body) => body.includes(what)).length >= count;

const leadOf = async (phone: string) => (await acme.get(`/accounts/${account.id}/leads/${path(phone)}`)).body;

const manualMessage = (phone: string) =>
  acme.post(`/accounts/${account.id}/conversations/${path(phone)}/messages`, {
    body: 'Hi, following up on your application.',
  });

/** A number that texted STOP (one confirmation) and was then erased: nothing of it is left but the opt-out. */
async function optedOutAndErased(phone: string) {
  await inboundSms(phone, 'STOP');
  expect(await sentTo(phone, confirmations('unsubscribed', 1))).toEqual([
    expect.stringContaining('unsubscribed'),
  ]);
  expect((await leadOf(phone)).opted_out).toBe(true);
  expect((await acme.post(`/accounts/${account.id}/leads/${path(phone)}/erase`)).status).toBe(200);
  expect((await acme.get(`/accounts/${account.id}/leads/${path(phone)}`)).status).toBe(404);
}

describe('an opt-out outlives the erasure of its person', () => {
  it('refuses a manual message to the number imported again, and shows the lead opted out', async () => {
    const phone = nextPhone();
    await optedOutAndErased(phone);

    const imported = await acme.post(`/accounts/${account.id}/leads`, { phone, name: 'Back Again' });
    expect(imported.status).toBe(201);
    expect(imported.body.action).toBe('created');
    expect((await leadOf(phone)).opted_out).toBe(true);
    const manual = await manualMessage(phone);
    expect(manual.status).toBe(409);
    expect(manual.body).toMatchObject({ code: 'lead_opted_out' });
    // Nothing went to the number after its one confirmation.
    expect(await sentTo(phone)).toEqual([expect.stringContaining('unsubscribed')]);
    // What was kept names the number by its keyed hash, never in clear.
    const kept = await system.services.db
      .selectFrom('opt_out_suppressions')
      .selectAll()
      .where('account_id', '=', account.id)
      .execute();
    expect(kept.length).toBeGreaterThan(0);
    expect(JSON.stringify(kept)).not.toContain(phone.slice(2));
  });

  it('keeps the number out of the default sequence on a bulk import with auto_sequence', async () => {
    const phone = nextPhone();
    const other = nextPhone();
    await optedOutAndErased(phone);

    const bulk = await acme.post(`/accounts/${account.id}/leads/bulk`, {
      leads: [
        { phone, auto_sequence: true },
        { phone: other, auto_sequence: true },
      ],
    });
    expect(bulk.status).toBe(200);
    expect(bulk.body).toMatchObject({ imported: 2, errors: [] });
    const enrolled = (await accountEvents(system.services)).flatMap((event) =>
      event.type === 'sequence.leads_enrolled' && event.account_id === account.id
        ? event.data.enrollments.map((enrollment) => enrollment.phone)
        : [],
    );
    expect(enrolled).toContain(other);
    expect(enrolled).not.toContain(phone);
    // Enrolling it by hand is refused as for any opted-out number.
    const sequenceId = (await acme.get(`/accounts/${account.id}/sequences`)).body.sequences[0].id;
    const enroll = await acme.post(`/accounts/${account.id}/sequences/${sequenceId}/enroll`, { phone });
    expect(enroll).toMatchObject({ status: 409, body: { code: 'lead_opted_out' } });

    await sequencer.tick();
    expect(await sentTo(other, (bodies) => bodies.length > 0)).toEqual([
      expect.stringContaining('this is Sunrise Home Loans'),
    ]);
    expect(await sentTo(phone)).toEqual([expect.stringContaining('unsubscribed')]);
    expect((await leadOf(phone)).opted_out).toBe(true);
  });

  it('lets START from the number opt it back in, and STOP out again, as before the erasure', async () => {
    const phone = nextPhone();
    await optedOutAndErased(phone);
    expect((await acme.post(`/accounts/${account.id}/leads`, { phone })).status).toBe(201);

    await inboundSms(phone, 'START');
    expect(await sentTo(phone, confirmations('resubscribed', 1))).toEqual([
      expect.stringContaining('unsubscribed'),
      expect.stringContaining('resubscribed'),
    ]);
    expect((await leadOf(phone)).opted_out).toBe(false);
    expect((await manualMessage(phone)).status).toBe(200);

    await inboundSms(phone, 'STOP');
    expect((await sentTo(phone, confirmations('unsubscribed', 2))).slice(-1)).toEqual([
      expect.stringContaining('unsubscribed'),
    ]);
    expect((await leadOf(phone)).opted_out).toBe(true);
    expect((await manualMessage(phone)).status).toBe(409);
  });

  it('is reproduced by a rebuild of the read models from offset 0, after the key is destroyed', async () => {
    const phone = nextPhone();
    const optedIn = nextPhone();
    await optedOutAndErased(phone);
    await optedOutAndErased(optedIn);
    expect((await acme.post(`/accounts/${account.id}/leads`, { phone, name: 'Returning' })).status).toBe(201);
    expect((await acme.post(`/accounts/${account.id}/leads`, { phone: optedIn })).status).toBe(201);
    await inboundSms(optedIn, 'START');
    await sentTo(phone, confirmations('unsubscribed', 1));
    await sentTo(optedIn, confirmations('resubscribed', 1));

    const before = await readModelSnapshot(system.services.db);
    expect(before.opt_out_suppressions!.length).toBeGreaterThan(0);
    await system.rebuildReadModels();
    expect(await readModelSnapshot(system.services.db)).toEqual(before);
    expect((await leadOf(phone)).opted_out).toBe(true);
    expect((await manualMessage(phone)).status).toBe(409);
    expect((await leadOf(optedIn)).opted_out).toBe(false);
  });
});
