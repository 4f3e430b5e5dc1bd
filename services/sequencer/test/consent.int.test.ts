import { createDb, type Database } from '@leadline/runtime';
import { accountEvents, fakeClock } from '@leadline/test-kit';
import type { Kysely } from 'kysely';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';
import { startTestSequencer } from '../../../system-test/workers';
import { type RunningSequencer } from '../src';

const HOUR = 3600_000;
// 10:00 in New York.
const clock = fakeClock(new Date('2026-03-02T15:00:00Z'));
let system: TestSystem;
let acme: PartnerClient;
let claimsDb: Kysely<Database>;
let run: RunningSequencer;

beforeAll(async () => {
  system = await startSystem({ clock });
  claimsDb = createDb(system.env.config.DATABASE_URL, { maxConnections: 8 });
  acme = partnerClient(system.app, await system.createPartner('Acme CRM'));
});
beforeEach(async () => {
  clock.set(new Date('2026-03-02T15:00:00Z'));
  run = await startTestSequencer(system, { db: claimsDb, clock });
});
afterEach(async () => {
  await run.stop();
});
afterAll(async () => {
  await claimsDb?.destroy();
  await system?.close();
});

let phones = 0;
const nextPhone = () => `+1212555${String(3000 + ++phones).padStart(4, '0')}`;
const path = (phone: string) => encodeURIComponent(phone);
const consent = { method: 'web_form', captured_at: '2026-03-01T12:00:00Z', ip_address: '203.0.113.7' };

/** An account as created today (it requires consent), with a default two-step sequence. */
async function setUp() {
  const account = (await acme.post('/accounts', { name: 'Sunrise' })).body;
  expect(account.consent_required).toBe(true);
  const sequence = (
    await acme.post(`/accounts/${account.id}/sequences`, {
      name: 'Nurture',
      is_default: true,
      steps: [
        { type: 'fixed', message: 'Hi {{first_name}}' },
        { type: 'fixed', message: 'Day one', delay_hours: 24 },
      ],
    })
  ).body;
  return { accountId: account.id as string, sequenceId: sequence.id as string };
}

const sentTo = async (accountId: string, phone: string) =>
  (
    (await acme.get(`/accounts/${accountId}/conversations/${path(phone)}/messages`)).body.messages as {
      body: string;
      direction: string;
    }[]
  )
    .filter((message) => message.direction === 'outbound')
    .map((message) => message.body)
    .reverse();

const sequenceOf = async (accountId: string, phone: string) =>
  (await acme.get(`/accounts/${accountId}/leads/${path(phone)}`)).body.sequence;

describe('sequences under consent_required', () => {
  it('sends step 0 to a lead imported with consent and holds it for one imported without, until consent is recorded', async () => {
    const { accountId } = await setUp();
    const [withConsent, without] = [nextPhone(), nextPhone()];
    // Given a bulk import with auto_sequence, one lead with consent and one without,
    await acme.post(`/accounts/${accountId}/leads/bulk`, {
      leads: [
        { phone: withConsent, first_name: 'Ana', auto_sequence: true, consent },
        { phone: without, first_name: 'Bo', auto_sequence: true },
      ],
    });
    // when the sequencer decides their due step 0,
    await run.tick();
    // then the lead with consent gets it, and the other gets nothing and says why it waits.
    expect(await sentTo(accountId, withConsent)).toEqual(['Hi Ana']);
    expect(await sentTo(accountId, without)).toEqual([]);
    expect(await sequenceOf(accountId, without)).toMatchObject({
      status: 'active',
      current_step: 0,
      next_step_at: null,
      hold_reason: 'no_consent',
    });
    const holds = (await accountEvents(system.services)).filter(
      (event) => event.type === 'sequence.step_held_for_consent' && event.account_id === accountId,
    );
    expect(holds).toMatchObject([
      { data: { phone: without, step_order: 0, stage: 'due', reason: 'no_consent' } },
    ]);
    // Nothing more goes out while it waits, however often the sequencer looks.
    clock.advance(HOUR);
    await run.tick();
    expect(await sentTo(accountId, without)).toEqual([]);

    // When consent is recorded at night, the held step waits for the sending window, then goes out.
    clock.set(new Date('2026-03-03T03:00:00Z'));
    const granted = await acme.post(`/accounts/${accountId}/leads/${path(without)}/consent`, {
      ...consent,
      captured_at: '2026-03-03T02:55:00Z',
    });
    expect(granted.status).toBe(201);
    await run.tick();
    expect(await sentTo(accountId, without)).toEqual([]);
    expect(await sequenceOf(accountId, without)).toMatchObject({
      hold_reason: 'quiet_hours',
      next_step_at: '2026-03-03T13:00:00.000Z',
    });
    clock.set(new Date('2026-03-03T13:00:00Z'));
    await run.tick();
    expect(await sentTo(accountId, without)).toEqual(['Hi Bo']);
    expect(await sequenceOf(accountId, without)).toMatchObject({ current_step: 1, hold_reason: null });
  });

  it('holds step 0 at enrollment, says so in the answer, and sends it once consent comes with an import', async () => {
    const { accountId, sequenceId } = await setUp();
    const phone = nextPhone();
    await acme.post(`/accounts/${accountId}/leads`, { phone, first_name: 'Cy' });
    const enrolled = await acme.post(`/accounts/${accountId}/sequences/${sequenceId}/enroll`, { phone });
    expect(enrolled.body).toEqual({
      success: true,
      action: 'enrolled',
      message_sent: false,
      next_step_at: null,
      hold_reason: 'no_consent',
    });
    expect(await sentTo(accountId, phone)).toEqual([]);
    // The lead imported again, now with its consent: the held step goes out.
    const imported = await acme.post(`/accounts/${accountId}/leads`, { phone, consent });
    expect(imported.body).toMatchObject({ action: 'skipped', consent_recorded: true });
    await run.tick();
    expect(await sentTo(accountId, phone)).toEqual(['Hi Cy']);
  });

  it('lets every held step go when the account stops requiring consent', async () => {
    const { accountId } = await setUp();
    const phone = nextPhone();
    await acme.post(`/accounts/${accountId}/leads`, { phone, first_name: 'Di', auto_sequence: true });
    await run.tick();
    expect(await sequenceOf(accountId, phone)).toMatchObject({ hold_reason: 'no_consent' });
    await acme.patch(`/accounts/${accountId}`, { consent_required: false });
    await run.tick();
    expect(await sentTo(accountId, phone)).toEqual(['Hi Di']);
  });

  it('lets a manual message reach a lead without consent: only proactive steps need it', async () => {
    const { accountId } = await setUp();
    const phone = nextPhone();
    await acme.post(`/accounts/${accountId}/leads`, { phone });
    const sent = await acme.post(`/accounts/${accountId}/conversations/${path(phone)}/messages`, {
      body: 'Thanks for calling us back.',
    });
    expect(sent.status).toBe(200);
    expect(await sentTo(accountId, phone)).toEqual(['Thanks for calling us back.']);
  });
});
