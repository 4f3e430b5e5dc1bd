import { offlineResponder, startAiAgent, type RunningAgent } from '@leadline/ai-agent';
import type { RunningInboundDecider } from '@leadline/inbound-decider';
import { createDb, createPostgresDocumentStore, newUuid, type Database } from '@leadline/runtime';
import { type RunningSequencer } from '@leadline/sequencer';
import { eventually, fakeClock, startFakeTwilio, type FakeTwilio } from '@leadline/test-kit';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';
import { outboxSettled, startTestInboundDecider, startTestSequencer } from '../../../system-test/workers';
import { postInboundSms } from '../../../system-test/inbound-sms';

/**
 * Revocation by any reasonable means, end to end: signed inbound SMS through the webhook, the inbound
 * decider, the SMS gateway to the fake Twilio, the sequencer and the AI agent (offline responder), on
 * real Kafka, registry and Postgres. For each way of saying stop, the lead gets exactly one
 * confirmation and nothing after it on any path; messages that only use the words opt nobody out.
 */
const HOUR = 3600_000;
/** A Monday, 09:00 in Austin (the leads' area code), inside the sending window; `week` weeks later. */
const monday = (week: number) => new Date(Date.UTC(2026, 2, 2 + 7 * week, 15));
const clock = fakeClock(monday(0));
let twilio: FakeTwilio;
let system: TestSystem;
let acme: PartnerClient;
let decider: RunningInboundDecider | undefined;
let sequencer: RunningSequencer;
let agent: RunningAgent;
const pools: Kysely<Database>[] = [];
const pool = () => {
  const db = createDb(system.env.config.DATABASE_URL, { maxConnections: 4 });
  pools.push(db);
  return db;
};
let account: { id: string; number: string };
let sequenceId: string;

const startDecider = async () => startTestInboundDecider(system, { db: pool(), clock });

beforeAll(async () => {
  twilio = await startFakeTwilio();
  // The inbound decider is this file's, so one test can answer opt-outs before they are decided.
  system = await startSystem({ clock, twilio, gateway: true, inboundDecider: false, awaitInbound: false });
  decider = await startDecider();
  sequencer = await startTestSequencer(system, { db: pool(), clock });
  const agentDb = pool();
  agent = await startAiAgent({
    ...system.services,
    db: agentDb,
    clock,
    newId: newUuid,
    groupId: `${system.env.config.TOPIC_PREFIX}leadline.ai-agent`,
    responder: offlineResponder,
    documents: createPostgresDocumentStore(agentDb, system.services.personalDataKeys),
    allowPrivateTargets: true,
    replyDelayMs: 0,
    maxMessagesPerLeadPerDay: 20,
    modelTimeoutMs: 5_000,
    unavailableAfterMs: 60_000,
    retryBaseMs: 50,
    pollIntervalMs: 50,
    onError: () => undefined,
  });
  acme = partnerClient(system.app, await system.createPartner('Acme CRM'));
  const created = await acme.post('/accounts', { name: 'Sunrise', company_name: 'Sunrise Home Loans' });
  account = { id: created.body.id, number: created.body.phone_number };
  const sequence = await acme.post(`/accounts/${account.id}/sequences`, {
    name: 'Nurture',
    steps: [
      { type: 'fixed', message: 'Hi {{first_name}}, this is Sunrise Home Loans.' },
      // Sent even after a reply: only an opt-out may stop it.
      { type: 'fixed', message: 'Day one: any questions?', delay_hours: 24, skip_if_replied: false },
    ],
  });
  sequenceId = sequence.body.id;
}, 120_000);
afterAll(async () => {
  await agent?.stop();
  await sequencer?.stop();
  await decider?.stop();
  await system?.close();
  for (const db of pools) await db.destroy();
  await twilio?.close();
});

let sids = 0;
let phones = 0;
const nextPhone = () => `+1512555${String(7000 + ++phones).padStart(4, '0')}`;

/** Posts an inbound SMS signed exactly as Twilio signs it; returns once Twilio has its answer. */
async function inboundSms(from: string, body: string) {
  const sid = `SM${String(++sids).padStart(8, '0')}${newUuid().replaceAll('-', '').slice(0, 24)}`;
  const response = await postInboundSms(system, { to: account.number, from, body, sid }, twilio);
  expect(response.statusCode).toBe(200);
  return sid;
}

/** What reached the fake Twilio for a phone. */
const sentTo = (phone: string) => twilio.messages.filter((message) => message.to === phone);

const leadOf = async (phone: string) =>
  (await acme.get(`/accounts/${account.id}/leads/${encodeURIComponent(phone)}`)).body;

const manualMessage = (phone: string) =>
  acme.post(`/accounts/${account.id}/conversations/${encodeURIComponent(phone)}/messages`, {
    body: 'Hi, following up on your application.',
  });

const outboundOf = async (phone: string) =>
  (
    (await acme.get(`/accounts/${account.id}/conversations/${encodeURIComponent(phone)}/messages?limit=250`))
      .body.messages as { direction: string; source: string; body: string }[]
  )
    .filter((message) => message.direction === 'outbound')
    .reverse();

/** Waits until the AI agent has recorded its turn for this inbound SMS (projected). */
async function aiTurnRecorded(sid: string) {
  const message = await eventually(async () =>
    system.services.db
      .selectFrom('messages')
      .select('id')
      .where('provider_message_id', '=', sid)
      .executeTakeFirst(),
  );
  await eventually(
    async () =>
      system.services.db
        .selectFrom('ai_handled_turns')
        .select('turn_key')
        .where('turn_key', '=', `message:${message.id}`)
        .executeTakeFirst(),
    { message: `the AI turn for ${sid}` },
  );
}

/** Waits until the gateway has settled (sent or refused) every message queued for the phone. */
const gatewaySettled = (phone: string) => outboxSettled(system, phone);

const revocations = [
  // The keywords, as people type them.
  'Stop.',
  'stop!!',
  'Opt-out',
  'unsubscribe me',
  'STOP ALL',
  // In words, English.
  'please stop texting me',
  'Take me off your list',
  "Don't contact me again.",
  'I no longer wish to receive these messages',
  // In words, Spanish.
  'No más mensajes',
  'dejen de enviarme mensajes',
  'ya no quiero recibir mensajes',
  'Baja',
  'no me escribas más',
];

const nonRevocations = [
  'stop by the office?',
  'can I stop the W-2 upload?',
  'I want to cancel my appointment',
  "don't stop, I'm interested",
  'when does the promo end?',
  '¿puedo parar en la oficina?',
  'Quiero cancelar mi cita',
];

describe('a revocation, however it is put', () => {
  it.each(revocations.map((body, index) => [body, index] as const))(
    '%j gets one confirmation, then nothing: not a manual message, a due step or an AI reply',
    async (body, index) => {
      // Each case on a Monday of its own, so its next step falls due on a weekday, inside the window.
      clock.set(monday(index + 1));
      const phone = nextPhone();
      // Consent given on a web form, so the sequence may text the lead until it revokes it.
      const consent = { method: 'web_form', captured_at: '2026-01-05T15:00:00Z' };
      expect(
        (await acme.post(`/accounts/${account.id}/leads`, { phone, first_name: 'Ana', consent })).status,
      ).toBe(201);
      const enrolled = await acme.post(`/accounts/${account.id}/sequences/${sequenceId}/enroll`, { phone });
      expect(enrolled.body.message_sent).toBe(true);
      await eventually(async () => (sentTo(phone).length === 1 ? true : undefined));

      // The lead says stop.
      await system.inboundDecided(await inboundSms(phone, body));
      const [, confirmation] = await eventually(async () =>
        sentTo(phone).length >= 2 ? sentTo(phone) : undefined,
      );
      expect(confirmation!.body).toBe(
        'Sunrise Home Loans: You are unsubscribed and will receive no more messages. Reply START to resubscribe.',
      );
      expect((await leadOf(phone)).opted_out).toBe(true);

      // A manual message is refused.
      expect(await manualMessage(phone)).toMatchObject({ status: 409, body: { code: 'lead_opted_out' } });
      // The next step falls due: the enrollment ended with the opt-out, so nothing is sent.
      clock.advance(24 * HOUR);
      await sequencer.tick();
      expect((await leadOf(phone)).sequence).toMatchObject({ status: 'opted_out', current_step: 1 });
      // The lead writes again: the AI records its turn and says nothing.
      const again = await inboundSms(phone, 'Hello? Can you tell me about rates?');
      await system.inboundDecided(again);
      await aiTurnRecorded(again);

      // Nothing but the step sent before the opt-out and the one confirmation was ever requested or sent.
      expect((await outboundOf(phone)).map((message) => message.source)).toEqual(['sequence', 'system']);
      await gatewaySettled(phone);
      expect(sentTo(phone)).toHaveLength(2);
    },
    60_000,
  );
});

describe('a message that only uses the words', () => {
  it.each(nonRevocations)('%j opts nobody out: the AI answers it and a manual message goes', async (body) => {
    const phone = nextPhone();
    const sid = await inboundSms(phone, body);
    await system.inboundDecided(sid);
    await aiTurnRecorded(sid);
    expect((await leadOf(phone)).opted_out).toBe(false);
    expect((await outboundOf(phone)).map((message) => message.source)).toEqual(['ai']);
    expect(await manualMessage(phone)).toMatchObject({ status: 200 });
  });
});

describe('a revocation in words answered but not yet decided', () => {
  it('refuses every send to the number from the moment Twilio is answered', async () => {
    await decider?.stop();
    decider = undefined;
    const answered: [phone: string, sid: string][] = [];
    try {
      for (const body of ['please stop texting me', 'No más mensajes, por favor']) {
        const phone = nextPhone();
        expect((await acme.post(`/accounts/${account.id}/leads`, { phone })).status).toBe(201);
        const sid = await inboundSms(phone, body);
        answered.push([phone, sid]);
        // Undecided: the lead does not show it yet, but nothing can be sent to it.
        expect((await leadOf(phone)).opted_out).toBe(false);
        expect(await manualMessage(phone)).toMatchObject({ status: 409, body: { code: 'lead_opted_out' } });
      }
    } finally {
      decider = await startDecider();
    }
    for (const [phone, sid] of answered) {
      await system.inboundDecided(sid, { timeoutMs: 60_000 });
      expect((await leadOf(phone)).opted_out).toBe(true);
      await gatewaySettled(phone);
      expect(sentTo(phone).map((message) => message.body)).toEqual([
        'Sunrise Home Loans: You are unsubscribed and will receive no more messages. Reply START to resubscribe.',
      ]);
    }
  }, 120_000);
});
