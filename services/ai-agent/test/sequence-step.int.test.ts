import type { DomainEvent } from '@leadline/events';
import { createDb, newUuid, systemClock } from '@leadline/runtime';
import { accountEvents, eventually, startFakeOpenAi, type FakeOpenAi } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSequencer } from '../../../system-test/workers';
import { createModelResponder } from '../src/model';
import { inbound, messagesOf, newAccount, startAgentSystem, type AgentSystem } from './harness';

let fake: FakeOpenAi;
let world: AgentSystem;
beforeAll(async () => {
  fake = await startFakeOpenAi();
  world = await startAgentSystem({
    responder: createModelResponder({
      apiKey: fake.apiKey,
      baseURL: fake.baseUrl,
      model: 'test-model',
      timeoutMs: 10_000,
    }),
    agent: { modelTimeoutMs: 10_000 },
  });
});
afterAll(async () => {
  await world?.close();
  await fake?.close();
});

/** The requests the fake received that mention `marker`. */
const requestsAbout = (marker: string) =>
  fake.requests.filter((request) => JSON.stringify(request.messages).includes(marker));

/** An account (sending window off: the clock is the wall's here) with a sequence whose first step is AI-written. */
async function accountWithAiSequence(instructions: string) {
  const { partner } = world;
  const account = await newAccount(partner, [{ name: 'Pay stub', type: 'document' }]);
  await partner.patch(`/accounts/${account.id}`, { sending_window: { enabled: false } });
  const created = await partner.post(`/accounts/${account.id}/sequences`, {
    name: 'Pay stub reminder',
    steps: [{ type: 'ai', instructions }],
  });
  if (created.status !== 201) throw new Error(JSON.stringify(created.body));
  return { ...account, sequenceId: created.body.id as string };
}

async function enroll(accountId: string, sequenceId: string, phone: string) {
  await world.partner.post(`/accounts/${accountId}/leads`, { phone, first_name: 'Ana' });
  const enrolled = await world.partner.post(`/accounts/${accountId}/sequences/${sequenceId}/enroll`, {
    phone,
  });
  if (enrolled.status !== 200 && enrolled.status !== 201) throw new Error(JSON.stringify(enrolled.body));
}

const eventsOf = async (accountId: string) =>
  (await accountEvents(world.system.services)).filter((event) => event.account_id === accountId);

/** The agent's recorded turns for this account's sequence steps, by phone. */
function stepTurns(accountId: string, count: number) {
  return eventually(
    async () => {
      const turns = (await eventsOf(accountId)).filter(
        (event): event is Extract<DomainEvent, { type: 'ai.turn_completed' }> =>
          event.type === 'ai.turn_completed' && event.data.sequence_step !== null,
      );
      return turns.length >= count ? turns : undefined;
    },
    { message: `${count} AI step turn(s)` },
  );
}

describe('an AI-written sequence step', () => {
  it('is written from its instructions and sent as a sequence message naming the step', async () => {
    const { partner } = world;
    const account = await accountWithAiSequence('Remind them about the pay stub [step]');
    const phone = '+15125550305';
    fake.respondWith(() => ({ text: 'Hi Ana, a quick reminder to send your pay stub when you can.' }));
    await enroll(account.id, account.sequenceId, phone);

    const [message] = await eventually(async () => {
      const sent = (await messagesOf(partner, account.id, phone)).filter((m) => m.source === 'sequence');
      return sent.length > 0 ? sent : undefined;
    });
    expect(message!.body).toBe('Hi Ana, a quick reminder to send your pay stub when you can.');
    expect(String(requestsAbout('[step]')[0]!.messages.at(-1)!.content)).toContain(
      'Remind them about the pay stub',
    );
    const enrollment = (await eventsOf(account.id)).find((event) => event.type === 'sequence.enrolled');
    const requested = (await eventsOf(account.id)).find(
      (event) => event.type === 'message.outbound_requested' && event.data.phone === phone,
    );
    expect(requested?.type === 'message.outbound_requested' && requested.data.sequence_step).toEqual({
      enrollment_id: enrollment?.type === 'sequence.enrolled' && enrollment.data.enrollment_id,
      sequence_id: account.sequenceId,
      step_order: 0,
    });
  });

  it('is not written for a lead without consent where the account requires it, and is once consent comes', async () => {
    const { partner } = world;
    const account = await accountWithAiSequence('Ask for the pay stub [consent]');
    await partner.patch(`/accounts/${account.id}`, { consent_required: true });
    const phone = '+15125550309';
    fake.respondWith(() => ({ text: 'Hi Ana, could you send your pay stub?' }));
    await enroll(account.id, account.sequenceId, phone);
    // The step is held for consent before the AI is asked: the model never sees it.
    await eventually(async () =>
      (await eventsOf(account.id)).find((event) => event.type === 'sequence.step_held_for_consent'),
    );
    expect(requestsAbout('[consent]')).toEqual([]);
    const lead = (await partner.get(`/accounts/${account.id}/leads/${encodeURIComponent(phone)}`)).body;
    expect(lead.sequence).toMatchObject({ hold_reason: 'no_consent', next_step_at: null });

    // Once consent is recorded, the sequencer finds the step due again and asks the AI to write it.
    const claims = createDb(world.system.env.config.DATABASE_URL, { maxConnections: 2 });
    const sequencer = await startTestSequencer(world.system, {
      db: claims,
      clock: systemClock,
      leaseMs: 30_000,
      pollIntervalMs: 100,
    });
    try {
      await partner.post(`/accounts/${account.id}/leads/${encodeURIComponent(phone)}/consent`, {
        method: 'verbal',
        captured_at: new Date().toISOString(),
        evidence_url: 'https://calls.example/recording/9.mp3',
      });
      const sent = await eventually(async () => {
        const messages = (await messagesOf(partner, account.id, phone)).filter(
          (m) => m.source === 'sequence',
        );
        return messages.length > 0 ? messages : undefined;
      });
      expect(sent).toMatchObject([{ body: 'Hi Ana, could you send your pay stub?' }]);
      expect(requestsAbout('[consent]')).toHaveLength(1);
    } finally {
      await sequencer.stop();
      await claims.destroy();
    }
  });

  it('sends nothing when the lead is unenrolled or opts out while the model is writing it', async () => {
    const { system, partner } = world;
    const account = await accountWithAiSequence('Remind them about the pay stub [slow-step]');
    const unenrolled = '+15125550311';
    const optedOut = '+15125550312';
    // Given a model that takes its time over this step,
    fake.respondWith((request) =>
      JSON.stringify(request.messages).includes('[slow-step]')
        ? { delayMs: 2_000, text: 'Hi Ana, please send your pay stub.' }
        : { text: 'OK' },
    );
    await enroll(account.id, account.sequenceId, unenrolled);
    await enroll(account.id, account.sequenceId, optedOut);
    await eventually(async () => (requestsAbout('[slow-step]').length >= 2 ? true : undefined));

    // when, while it writes, one lead is taken out of the sequence and the other texts STOP,
    const out = await partner.post(`/accounts/${account.id}/sequences/${account.sequenceId}/unenroll`, {
      phone: unenrolled,
    });
    expect(out.body).toMatchObject({ action: 'unenrolled' });
    await inbound(system, account.number, optedOut, 'STOP');

    // then both turns end without a message: nothing is requested for either number.
    const turns = await stepTurns(account.id, 2);
    expect(turns.map((turn) => [turn.data.phone, turn.data.outcome, turn.data.reason]).sort()).toEqual([
      [unenrolled, 'skipped', 'enrollment_ended'],
      [optedOut, 'skipped', 'enrollment_ended'],
    ]);
    // (The opted-out number gets only the unsubscribe confirmation.)
    const requested = (await eventsOf(account.id)).flatMap((event) =>
      event.type === 'message.outbound_requested' ? [[event.data.phone, event.data.source]] : [],
    );
    expect(requested).toEqual([[optedOut, 'system']]);
    expect(
      (await messagesOf(partner, account.id, unenrolled)).filter((m) => m.direction === 'outbound'),
    ).toEqual([]);
  });

  it('waits for the decision of a STOP answered while the model is writing it, and ends with the opt-out', async () => {
    const { system, partner } = world;
    const { db } = system.services;
    const account = await accountWithAiSequence('Remind them about the pay stub [guarded-step]');
    const phone = '+15125550313';
    // Given a model that takes its time over this step,
    fake.respondWith((request) =>
      JSON.stringify(request.messages).includes('[guarded-step]')
        ? { delayMs: 2_000, text: 'Hi Ana, please send your pay stub.' }
        : { text: 'OK' },
    );
    await enroll(account.id, account.sequenceId, phone);
    await eventually(async () => (requestsAbout('[guarded-step]').length >= 1 ? true : undefined));

    // when, while it writes, the lead's STOP is answered to Twilio and its decision is still queued (the
    // guard the inbound route writes, with the decision not on its way yet),
    const answered = `SM${newUuid()}`;
    const guardedAt = new Date();
    await db
      .insertInto('opt_out_guards')
      .values({ account_id: account.id, phone, message_sid: answered, created_at: guardedAt })
      .execute();

    // then, once the agent has taken the model's answer and decided to wait for the STOP's decision (its
    // turn, no longer leased, is due again later than the guard: only a decision after the model's
    // answer sets that, the turn being leased while the model writes), nothing is requested and the
    // step has not failed: failing it would move the enrollment on (to `completed`, its only step)
    // before the opt-out ends it.
    await eventually(
      async () => {
        const waiting = await db
          .selectFrom('ai_pending_turns')
          .select('id')
          .where('account_id', '=', account.id)
          .where('phone', '=', phone)
          .where('kind', '=', 'step')
          .where('lease_until', 'is', null)
          .where('due_at', '>', guardedAt)
          .executeTakeFirst();
        return waiting ? true : undefined;
      },
      { message: 'the agent never decided to wait for the STOP' },
    );
    const written = async () =>
      (await eventsOf(account.id)).flatMap((event) =>
        event.type === 'message.outbound_requested' || event.type === 'sequence.ai_step_failed'
          ? [[event.type, event.data.phone]]
          : [],
      );
    expect(await written()).toEqual([]);

    // When the STOP is decided, the enrollment ends as opted_out and the waiting turn ends with it.
    await inbound(system, account.number, phone, 'STOP');
    await db.deleteFrom('opt_out_guards').where('message_sid', '=', answered).execute();
    const turns = await stepTurns(account.id, 1);
    expect(turns.map((turn) => [turn.data.phone, turn.data.outcome, turn.data.reason])).toEqual([
      [phone, 'skipped', 'enrollment_ended'],
    ]);
    const enrollment = await db
      .selectFrom('sequence_enrollments')
      .select('status')
      .where('account_id', '=', account.id)
      .where('phone', '=', phone)
      .executeTakeFirstOrThrow();
    expect(enrollment.status).toBe('opted_out');
    // Only the unsubscribe confirmation went to the number.
    expect(await written()).toEqual([['message.outbound_requested', phone]]);
    expect((await messagesOf(partner, account.id, phone)).filter((m) => m.source === 'ai')).toEqual([]);
  });
});
