import { conversationState } from '@leadline/decision-state';
import { decideSendMessage } from '@leadline/domain';
import {
  createDb,
  listParked,
  newUuid,
  partitionForKey,
  skipParked,
  type CommandBus,
  type Database,
} from '@leadline/runtime';
import { accountEvents, eventually, fakeClock } from '@leadline/test-kit';
import type { Kysely } from 'kysely';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';
import { claimDueSteps, startSequencer, type RunningSequencer } from '../src';

const HOUR = 3600_000;
// 10:00 in New York.
const clock = fakeClock(new Date('2026-03-02T15:00:00Z'));
let system: TestSystem;
let acme: PartnerClient;
let claimsDb: Kysely<Database>;
const running: RunningSequencer[] = [];

async function sequencer(
  commands: CommandBus = system.services.commands,
  leaseMs = 60_000,
  groupId = `${system.env.config.TOPIC_PREFIX}leadline.sequencer`,
) {
  const started = await startSequencer({
    ...system.services,
    commands,
    db: claimsDb,
    clock,
    newId: newUuid,
    groupId,
    hourSeconds: 3600,
    leaseMs,
    // Tests drive it with tick(); the poll stays out of the way.
    pollIntervalMs: 3_600_000,
    onError: () => undefined,
  });
  running.push(started);
  return started;
}

beforeAll(async () => {
  system = await startSystem({ clock });
  claimsDb = createDb(system.env.config.DATABASE_URL, { maxConnections: 8 });
  acme = partnerClient(system.app, await system.createPartner('Acme CRM'));
});
beforeEach(() => clock.set(new Date('2026-03-02T15:00:00Z')));
// Each test runs its own sequencers: none from an earlier test ticks in the background.
afterEach(async () => {
  for (const started of running.splice(0)) await started.stop();
});
afterAll(async () => {
  await claimsDb?.destroy();
  await system?.close();
});

let phones = 0;
const nextPhone = () => `+1212555${String(1000 + ++phones).padStart(4, '0')}`;

const threeSteps = {
  name: 'Nurture',
  steps: [
    { type: 'fixed', message: 'Hi {{first_name}}' },
    { type: 'fixed', message: 'Day one', delay_hours: 24 },
    { type: 'fixed', message: 'Day two', delay_hours: 24, skip_if_replied: false },
  ],
};

async function setUp(sequence: Record<string, unknown> = threeSteps) {
  // Steps go out without recorded consent here: the consent rule has its own tests.
  const account = (await acme.post('/accounts', { name: 'Sunrise', consent_required: false })).body;
  const created = (await acme.post(`/accounts/${account.id}/sequences`, sequence)).body;
  return {
    accountId: account.id as string,
    number: account.phone_number as string,
    sequenceId: created.id as string,
  };
}

async function enrolledLead(accountId: string, sequenceId: string, fields: Record<string, unknown> = {}) {
  const phone = nextPhone();
  await acme.post(`/accounts/${accountId}/leads`, { phone, first_name: 'Ana', ...fields });
  const enrolled = await acme.post(`/accounts/${accountId}/sequences/${sequenceId}/enroll`, { phone });
  return { phone, enrolled: enrolled.body };
}

const bodiesOf = async (accountId: string, phone: string) =>
  (
    (await acme.get(`/accounts/${accountId}/conversations/${encodeURIComponent(phone)}/messages?limit=250`))
      .body.messages as { body: string; direction: string }[]
  )
    .filter((message) => message.direction === 'outbound')
    .map((message) => message.body)
    .reverse();

const leadOf = async (accountId: string, phone: string) =>
  (await acme.get(`/accounts/${accountId}/leads/${encodeURIComponent(phone)}`)).body;

function inbound(to: string, from: string, body: string) {
  return system.app.inject({
    method: 'POST',
    url: '/twilio/sms',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      MessageSid: `SM${newUuid().replaceAll('-', '')}`,
      From: from,
      To: to,
      Body: body,
      NumMedia: '0',
    }).toString(),
  });
}

/** Decides what is due now; the sequencer's appends are projected before it returns. */
const settled = (run: RunningSequencer) => run.tick();

describe('the sequencer', () => {
  it('sends each step after its delay and completes the enrollment', async () => {
    const run = await sequencer();
    const { accountId, sequenceId } = await setUp();
    const { phone, enrolled } = await enrolledLead(accountId, sequenceId);
    expect(enrolled.message_sent).toBe(true);
    clock.advance(23 * HOUR);
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana']);
    clock.advance(HOUR);
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana', 'Day one']);
    expect((await leadOf(accountId, phone)).sequence).toMatchObject({ status: 'active', current_step: 2 });
    clock.advance(24 * HOUR);
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana', 'Day one', 'Day two']);
    expect((await leadOf(accountId, phone)).sequence).toEqual({
      sequence_id: sequenceId,
      name: 'Nurture',
      status: 'completed',
      current_step: 3,
      total_steps: 3,
      next_step_at: null,
      hold_reason: null,
    });
    expect((await acme.get(`/accounts/${accountId}/sequences/${sequenceId}`)).body).toMatchObject({
      enrolled_count: 1,
      completed_count: 1,
    });
    const usage = (await acme.get(`/usage?account_id=${accountId}&period=2026-03`)).body;
    expect(usage.totals.sequences_completed).toBe(1);
    const completed = (await accountEvents(system.services)).filter(
      (event) => event.type === 'sequence.completed' && event.account_id === accountId,
    );
    expect(completed).toMatchObject([{ data: { phone, sequence_name: 'Nurture', total_steps: 3 } }]);

    // Completed: enrolling again starts over.
    const again = await acme.post(`/accounts/${accountId}/sequences/${sequenceId}/enroll`, { phone });
    expect(again.body).toMatchObject({ action: 'reactivated', message_sent: true });
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana', 'Day one', 'Day two', 'Hi Ana']);
  });

  it('skips skip_if_replied steps once the lead replied, tells the partner, and still completes', async () => {
    const run = await sequencer();
    const { accountId, number, sequenceId } = await setUp();
    const { phone } = await enrolledLead(accountId, sequenceId);
    expect((await inbound(number, phone, 'Who is this?')).statusCode).toBeLessThan(300);
    clock.advance(24 * HOUR);
    await settled(run);
    clock.advance(24 * HOUR);
    await settled(run);
    // Step 1 skipped (it skips on reply); step 2 does not.
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana', 'Day two']);
    expect((await leadOf(accountId, phone)).sequence.status).toBe('completed');
    const events = (await accountEvents(system.services)).filter((event) => event.account_id === accountId);
    expect(events.filter((event) => event.type === 'sequence.reply_received')).toMatchObject([
      { data: { phone, sequence_name: 'Nurture', current_step: 1, message_body: 'Who is this?' } },
    ]);
    expect(events.filter((event) => event.type === 'sequence.step_skipped')).toMatchObject([
      { data: { step_order: 1, reason: 'replied' } },
    ]);
  });

  it('pauses a deactivated account and sends the overdue step once at reactivation', async () => {
    const run = await sequencer();
    const { accountId, sequenceId } = await setUp();
    const { phone } = await enrolledLead(accountId, sequenceId);
    await acme.delete(`/accounts/${accountId}`);
    expect((await leadOf(accountId, phone)).sequence.status).toBe('paused');
    clock.advance(72 * HOUR);
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana']);
    await acme.patch(`/accounts/${accountId}`, { status: 'active' });
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana', 'Day one']);
    expect((await leadOf(accountId, phone)).sequence).toMatchObject({
      status: 'active',
      current_step: 2,
      next_step_at: new Date(clock.now().getTime() + 24 * HOUR).toISOString(),
    });
  });

  it('sends nothing from an inactive sequence until it is active again', async () => {
    const run = await sequencer();
    const { accountId, sequenceId } = await setUp();
    const { phone } = await enrolledLead(accountId, sequenceId);
    await acme.patch(`/accounts/${accountId}/sequences/${sequenceId}`, { is_active: false });
    clock.advance(48 * HOUR);
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana']);
    await acme.patch(`/accounts/${accountId}/sequences/${sequenceId}`, { is_active: true });
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana', 'Day one']);
  });

  it('stops for good when the number opts out, and sends nothing after', async () => {
    const run = await sequencer();
    const { accountId, number, sequenceId } = await setUp({
      ...threeSteps,
      steps: threeSteps.steps.map((step) => ({ ...step, skip_if_replied: false })),
    });
    const { phone } = await enrolledLead(accountId, sequenceId);
    await inbound(number, phone, 'STOP');
    clock.advance(72 * HOUR);
    await settled(run);
    const bodies = await bodiesOf(accountId, phone);
    expect(bodies[0]).toBe('Hi Ana');
    expect(bodies.slice(1).every((body) => body.includes('unsubscribed'))).toBe(true);
    expect((await leadOf(accountId, phone)).sequence).toMatchObject({
      status: 'opted_out',
      next_step_at: null,
    });
  });

  it('sends nothing more to a lead deleted mid-sequence', async () => {
    const run = await sequencer();
    const { accountId, sequenceId } = await setUp();
    const { phone } = await enrolledLead(accountId, sequenceId);
    await acme.delete(`/accounts/${accountId}/leads/${encodeURIComponent(phone)}`);
    clock.advance(72 * HOUR);
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana']);
  });

  it('holds a step that falls due at night until the lead’s window opens', async () => {
    const run = await sequencer();
    const { accountId, sequenceId } = await setUp({
      name: 'Evening',
      steps: [
        { type: 'fixed', message: 'One' },
        { type: 'fixed', message: 'Two', delay_hours: 12 },
      ],
    });
    // Step 1 falls due at 22:00 in New York: it waits for 08:00 there.
    const { phone, enrolled } = await enrolledLead(accountId, sequenceId);
    expect(enrolled.next_step_at).toBe('2026-03-03T13:00:00.000Z');
    clock.advance(12 * HOUR);
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['One']);
    clock.set(new Date('2026-03-03T13:00:00Z'));
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['One', 'Two']);
  });

  it('defers a step that became due outside the window (the window changed meanwhile)', async () => {
    const run = await sequencer();
    const { accountId, sequenceId } = await setUp();
    const { phone } = await enrolledLead(accountId, sequenceId);
    // Changed before the clock moves: a tick the log wakes meanwhile must not find the step due under
    // the old window.
    await acme.patch(`/accounts/${accountId}`, { sending_window: { start: '11:00' } });
    clock.advance(24 * HOUR);
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana']);
    expect((await leadOf(accountId, phone)).sequence.next_step_at).toBe('2026-03-03T16:00:00.000Z');
    clock.set(new Date('2026-03-03T16:00:00Z'));
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Hi Ana', 'Day one']);
  });
});

describe("the lead's state's rules", () => {
  it('sends a Florida lead at most 3 proactive messages in 24 hours, holds the 4th and sends it after', async () => {
    // Given an hourly sequence of four steps and a Miami lead enrolled at 10:00 EST,
    const run = await sequencer();
    const { accountId, sequenceId } = await setUp({
      name: 'Hourly',
      steps: [
        { type: 'fixed', message: 'One' },
        { type: 'fixed', message: 'Two', delay_hours: 1 },
        { type: 'fixed', message: 'Three', delay_hours: 1 },
        { type: 'fixed', message: 'Four', delay_hours: 1 },
      ],
    });
    const phone = `+1305555${String(1000 + ++phones).padStart(4, '0')}`;
    await acme.post(`/accounts/${accountId}/leads`, { phone, first_name: 'Ana' });
    await acme.post(`/accounts/${accountId}/sequences/${sequenceId}/enroll`, { phone });
    for (let hour = 1; hour <= 3; hour++) {
      clock.advance(HOUR);
      await settled(run);
    }
    // when the fourth step falls due at 13:00, three hours after the first,
    expect(await bodiesOf(accountId, phone)).toEqual(['One', 'Two', 'Three']);
    // then it is held until the first message is 24 hours old, and the hold is on the log.
    const lead = await leadOf(accountId, phone);
    expect(lead.sequence).toMatchObject({
      status: 'active',
      current_step: 3,
      next_step_at: '2026-03-03T15:00:00.000Z',
    });
    const held = (await accountEvents(system.services)).filter(
      (event) => event.type === 'sequence.step_held' && event.account_id === accountId,
    );
    expect(held.map((event) => event.data)).toEqual([
      expect.objectContaining({
        phone,
        step_order: 3,
        stage: 'due',
        reason: 'frequency_cap',
        state: 'FL',
        zone: 'America/New_York',
        next_step_at: '2026-03-03T15:00:00.000Z',
      }),
    ]);
    // Ticking again before then sends nothing.
    clock.set(new Date('2026-03-03T14:59:00Z'));
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['One', 'Two', 'Three']);
    clock.set(new Date('2026-03-03T15:00:00Z'));
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['One', 'Two', 'Three', 'Four']);
    expect((await leadOf(accountId, phone)).sequence.status).toBe('completed');
  });
});

describe('exactly once', () => {
  async function dueLeads(count: number) {
    const { accountId, sequenceId } = await setUp({
      name: 'Later',
      steps: [{ type: 'fixed', message: 'Hello {{first_name}}', delay_hours: 1 }],
    });
    const phonesOf = Array.from({ length: count }, nextPhone);
    await acme.post(`/accounts/${accountId}/leads/bulk`, { leads: phonesOf.map((phone) => ({ phone })) });
    for (const phone of phonesOf) {
      expect(
        (await acme.post(`/accounts/${accountId}/sequences/${sequenceId}/enroll`, { phone })).body
          .message_sent,
      ).toBe(false);
    }
    clock.advance(HOUR);
    return { accountId, phones: phonesOf };
  }

  const outboundCounts = async (accountId: string) => {
    const rows = await system.services.db
      .selectFrom('messages')
      .select(['phone'])
      .select((eb) => eb.fn.countAll<string>().as('count'))
      .where('account_id', '=', accountId)
      .where('direction', '=', 'outbound')
      .groupBy('phone')
      .execute();
    return new Map(rows.map((row) => [row.phone, Number(row.count)]));
  };

  it('two sequencers racing send each due step once', async () => {
    const [a, b] = [await sequencer(), await sequencer()];
    const { accountId, phones } = await dueLeads(40);
    await Promise.all([a.tick(), b.tick(), a.tick(), b.tick()]);
    const counts = await outboundCounts(accountId);
    expect(phones.map((phone) => counts.get(phone))).toEqual(phones.map(() => 1));
  });

  it('a sequencer that died after claiming leaves the steps to the next one, sent once', async () => {
    const { accountId, phones } = await dueLeads(10);
    // Claimed, then the process died before deciding anything.
    expect(await claimDueSteps(claimsDb, clock.now(), 60_000, 100)).toHaveLength(10);
    const restarted = await sequencer();
    await restarted.tick();
    expect((await outboundCounts(accountId)).size).toBe(0);
    clock.advance(61_000);
    await restarted.tick();
    const counts = await outboundCounts(accountId);
    expect(phones.map((phone) => counts.get(phone))).toEqual(phones.map(() => 1));
  });

  it('a sequencer that died after appending, before releasing its claims, sends nothing twice', async () => {
    const { accountId, phones } = await dueLeads(10);
    const crashing: CommandBus = {
      ...system.services.commands,
      async execute(command) {
        await system.services.commands.execute(command);
        throw new Error('killed after the append');
      },
    };
    const dying = await sequencer(crashing, 1_000);
    await dying.tick();
    await dying.stop();
    clock.advance(5_000);
    const restarted = await sequencer();
    await restarted.tick();
    const counts = await outboundCounts(accountId);
    expect(phones.map((phone) => counts.get(phone))).toEqual(phones.map(() => 1));
  });

  it('1,000 leads bulk-imported with auto_sequence each get step 0 once', async () => {
    const [a, b] = [await sequencer(), await sequencer()];
    const { accountId } = await setUp({ ...threeSteps, is_default: true });
    const leads = Array.from({ length: 1000 }, () => ({ phone: nextPhone(), auto_sequence: true }));
    const imported = await acme.post(`/accounts/${accountId}/leads/bulk`, { leads });
    expect(imported.body).toMatchObject({ imported: 1000 });
    await eventually(
      async () => {
        await Promise.all([a.tick(), b.tick()]);
        return (await outboundCounts(accountId)).size === 1000 || undefined;
      },
      { timeoutMs: 120_000 },
    );
    const counts = await outboundCounts(accountId);
    expect([...counts.values()].every((count) => count === 1)).toBe(true);
    expect(
      (await acme.get(`/accounts/${accountId}/conversations?limit=1`)).body.conversations[0].in_sequence,
    ).toBe(true);
  });
});

describe('batched decisions', () => {
  const sequenceSent = async (accountId: string) => {
    const rows = await system.services.db
      .selectFrom('messages')
      .select(['phone'])
      .select((eb) => eb.fn.countAll<string>().as('count'))
      .where('account_id', '=', accountId)
      .where('source', '=', 'sequence')
      .groupBy('phone')
      .execute();
    return new Map(rows.map((row) => [row.phone, Number(row.count)]));
  };
  const heldOf = async (accountId: string) =>
    (await accountEvents(system.services)).flatMap((event) =>
      event.type === 'sequence.step_held' && event.account_id === accountId ? [event.data] : [],
    );
  const later = {
    name: 'Later',
    steps: [
      { type: 'fixed', message: 'Hello {{first_name}}', delay_hours: 1 },
      { type: 'fixed', message: 'Again', delay_hours: 24 },
    ],
  };
  async function enrollAll(accountId: string, sequenceId: string, phonesOf: string[]) {
    await acme.post(`/accounts/${accountId}/leads/bulk`, {
      leads: phonesOf.map((phone) => ({ phone, first_name: 'Ana' })),
    });
    for (const phone of phonesOf) {
      const enrolled = await acme.post(`/accounts/${accountId}/sequences/${sequenceId}/enroll`, { phone });
      expect(enrolled.body.message_sent).toBe(false);
    }
  }

  it('decides many accounts’ due steps at once, each sent once, with every rule kept inside a batch', async () => {
    // Given three accounts with steps falling due at one instant:
    const first = await setUp(later);
    const second = await setUp(later);
    const oneStep = { name: 'One', steps: [{ type: 'fixed', message: 'Hello', delay_hours: 1 }] };
    const capped = await setUp(oneStep);
    const firstPhones = Array.from({ length: 30 }, nextPhone);
    const secondPhones = Array.from({ length: 12 }, nextPhone);
    await enrollAll(first.accountId, first.sequenceId, firstPhones);
    await enrollAll(second.accountId, second.sequenceId, secondPhones);
    // a Miami lead in four sequences of one account, whose first steps all fall due together (Florida
    // allows three proactive messages in 24 hours),
    const miami = `+1305555${String(1000 + ++phones).padStart(4, '0')}`;
    const cappedSequences = [capped.sequenceId];
    for (const name of ['Two', 'Three', 'Four'])
      cappedSequences.push(
        (await acme.post(`/accounts/${capped.accountId}/sequences`, { ...oneStep, name })).body.id,
      );
    await acme.post(`/accounts/${capped.accountId}/leads`, { phone: miami, first_name: 'Ana' });
    for (const sequenceId of cappedSequences)
      await acme.post(`/accounts/${capped.accountId}/sequences/${sequenceId}/enroll`, { phone: miami });
    clock.advance(HOUR);
    // and, after the due steps are claimed and before they are decided, one of the second account's
    // leads opts out, one is taken out of its sequence, and one is deleted.
    const [optedOut, unenrolled, deleted] = [secondPhones[3]!, secondPhones[6]!, secondPhones[9]!];
    let interruption: Promise<unknown> | undefined;
    const interrupt = async () => {
      await inbound(second.number, optedOut, 'STOP');
      await acme.post(`/accounts/${second.accountId}/sequences/${second.sequenceId}/unenroll`, {
        phone: unenrolled,
      });
      await acme.delete(`/accounts/${second.accountId}/leads/${encodeURIComponent(deleted)}`);
      await eventually(async () =>
        (await leadOf(second.accountId, optedOut)).sequence?.status === 'opted_out' ? true : undefined,
      );
    };
    const commands: CommandBus = {
      ...system.services.commands,
      async execute(command) {
        // Every decision on the second account (not the sequencer's empty catch-up commands) comes
        // after the interruption, whichever sequencer claimed its steps.
        const deciding = command.lockKeys.length > 0;
        if (deciding && 'accountId' in command.stream && command.stream.accountId === second.accountId)
          await (interruption ??= interrupt());
        return system.services.commands.execute(command);
      },
    };
    // When two sequencers tick at once,
    const [a, b] = [await sequencer(commands), await sequencer(commands)];
    await Promise.all([a.tick(), b.tick()]);
    expect(interruption).toBeDefined();

    // then every due step went out exactly once,
    const firstSent = await sequenceSent(first.accountId);
    expect(firstPhones.map((phone) => firstSent.get(phone))).toEqual(firstPhones.map(() => 1));
    // each traced on the log to its own enrollment, though one command decided them together,
    const enrollments = await system.services.db
      .selectFrom('sequence_enrollments')
      .select(['id', 'phone'])
      .where('account_id', '=', first.accountId)
      .execute();
    const enrollmentOf = new Map(enrollments.map((enrollment) => [enrollment.phone, enrollment.id]));
    const requested = (await accountEvents(system.services)).flatMap((event) =>
      event.type === 'message.outbound_requested' && event.account_id === first.accountId ? [event] : [],
    );
    expect(requested.map((event) => event.correlation_id)).toEqual(
      requested.map((event) => enrollmentOf.get(event.data.phone)),
    );
    // none to the leads that opted out, left the sequence or were deleted meanwhile,
    const secondSent = await sequenceSent(second.accountId);
    const stopped = new Set([optedOut, unenrolled, deleted]);
    expect(secondPhones.map((phone) => secondSent.get(phone) ?? 0)).toEqual(
      secondPhones.map((phone) => (stopped.has(phone) ? 0 : 1)),
    );
    expect((await leadOf(second.accountId, optedOut)).sequence.status).toBe('opted_out');
    // and the Miami lead got three: the fourth step, counted against the three decided before it in
    // the same batch, is held until the first of them is 24 hours old.
    expect((await sequenceSent(capped.accountId)).get(miami)).toBe(3);
    expect(await heldOf(capped.accountId)).toEqual([
      expect.objectContaining({
        phone: miami,
        step_order: 0,
        reason: 'frequency_cap',
        state: 'FL',
        next_step_at: '2026-03-03T16:00:00.000Z',
      }),
    ]);
    // Ticking again sends nothing more; the held step goes out when the cap allows it.
    await Promise.all([a.tick(), b.tick()]);
    expect((await sequenceSent(first.accountId)).get(firstPhones[0]!)).toBe(1);
    expect((await sequenceSent(capped.accountId)).get(miami)).toBe(3);
    clock.set(new Date('2026-03-03T16:00:00Z'));
    await a.tick();
    expect((await sequenceSent(capped.accountId)).get(miami)).toBe(4);
  });

  it('sends nothing to a number whose STOP was answered but is not decided yet', async () => {
    const run = await sequencer();
    const { accountId, sequenceId } = await setUp(later);
    const [guarded, other] = [nextPhone(), nextPhone()];
    await enrollAll(accountId, sequenceId, [guarded, other]);
    // The STOP was answered to Twilio (the guard is written then); the inbound decider has not run.
    await system.services.db
      .insertInto('opt_out_guards')
      .values({
        account_id: accountId,
        phone: guarded,
        message_sid: `SM${newUuid()}`,
        created_at: clock.now(),
      })
      .execute();
    clock.advance(HOUR);
    await settled(run);
    const sent = await sequenceSent(accountId);
    expect(sent.get(other)).toBe(1);
    expect(sent.get(guarded)).toBeUndefined();
    await system.services.db.deleteFrom('opt_out_guards').where('phone', '=', guarded).execute();
  });

  it('records the hold of an imported step 0 and sends it when the window opens, once', async () => {
    // Given an import at 03:00 in New York (midnight in Los Angeles) with auto_sequence,
    clock.set(new Date('2026-03-02T08:00:00Z'));
    const run = await sequencer();
    const { accountId } = await setUp({ ...threeSteps, is_default: true });
    const newYork = nextPhone();
    const losAngeles = `+1213555${String(1000 + ++phones).padStart(4, '0')}`;
    await acme.post(`/accounts/${accountId}/leads/bulk`, {
      leads: [newYork, losAngeles].map((phone) => ({ phone, auto_sequence: true })),
    });
    await settled(run);
    // then nothing goes out at night, each lead shows its own real send time,
    expect((await sequenceSent(accountId)).size).toBe(0);
    expect((await leadOf(accountId, newYork)).sequence.next_step_at).toBe('2026-03-02T13:00:00.000Z');
    expect((await leadOf(accountId, losAngeles)).sequence.next_step_at).toBe('2026-03-02T16:00:00.000Z');
    // and each hold is on the log as it is for any later step.
    const held = await heldOf(accountId);
    expect(held).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          phone: newYork,
          step_order: 0,
          stage: 'due',
          reason: 'quiet_hours',
          zone: 'America/New_York',
          next_step_at: '2026-03-02T13:00:00.000Z',
        }),
        expect.objectContaining({
          phone: losAngeles,
          step_order: 0,
          stage: 'due',
          reason: 'quiet_hours',
          zone: 'America/Los_Angeles',
          next_step_at: '2026-03-02T16:00:00.000Z',
        }),
      ]),
    );
    expect(held).toHaveLength(2);
    // When New York's window opens only its lead gets step 0; Los Angeles's at its own 08:00.
    clock.set(new Date('2026-03-02T13:00:00Z'));
    await settled(run);
    expect([...(await sequenceSent(accountId))]).toEqual([[newYork, 1]]);
    clock.set(new Date('2026-03-02T16:00:00Z'));
    await settled(run);
    await settled(run);
    expect(await sequenceSent(accountId)).toEqual(
      new Map([
        [newYork, 1],
        [losAngeles, 1],
      ]),
    );
  });

  it('holds a Louisiana lead’s step 0 over Mardi Gras, a state-only holiday, and sends it the next morning', async () => {
    // Given Mardi Gras 2026 (Tuesday February 17), 10:00 in New Orleans, 11:00 in New York,
    clock.set(new Date('2026-02-17T16:00:00Z'));
    const run = await sequencer();
    const { accountId } = await setUp({ ...threeSteps, is_default: true });
    const newYork = nextPhone();
    const newOrleans = `+1504555${String(1000 + ++phones).padStart(4, '0')}`;
    await acme.post(`/accounts/${accountId}/leads/bulk`, {
      leads: [newYork, newOrleans].map((phone) => ({ phone, auto_sequence: true })),
    });
    await settled(run);
    // then the New York lead gets step 0 now and the Louisiana lead waits for Wednesday 08:00 CST,
    expect([...(await sequenceSent(accountId))]).toEqual([[newYork, 1]]);
    expect(await heldOf(accountId)).toEqual([
      expect.objectContaining({
        phone: newOrleans,
        step_order: 0,
        reason: 'state_holiday',
        state: 'LA',
        next_step_at: '2026-02-18T14:00:00.000Z',
      }),
    ]);
    clock.set(new Date('2026-02-18T14:00:00Z'));
    await settled(run);
    expect((await sequenceSent(accountId)).get(newOrleans)).toBe(1);
  });
});

describe('AI steps', () => {
  it('asks the AI agent, waits, and moves on when the agent sends (or fails)', async () => {
    const run = await sequencer();
    const { accountId, sequenceId } = await setUp({
      name: 'AI',
      steps: [
        { type: 'ai', instructions: 'Ask for the pay stub.' },
        { type: 'ai', instructions: 'Remind them.', delay_hours: 1 },
        { type: 'fixed', message: 'Bye', delay_hours: 1 },
      ],
    });
    const { phone, enrolled } = await enrolledLead(accountId, sequenceId);
    expect(enrolled.message_sent).toBe(false);
    const requested = async () =>
      (await accountEvents(system.services)).filter(
        (event) => event.type === 'sequence.ai_step_requested' && event.account_id === accountId,
      );
    expect(await requested()).toMatchObject([
      { data: { phone, step_order: 0, instructions: 'Ask for the pay stub.' } },
    ]);
    const request = (await requested())[0]!;
    if (request.type !== 'sequence.ai_step_requested') throw new Error('unreachable');

    // The agent writes and sends the message through the send decider.
    await system.services.commands.execute({
      stream: { topic: 'account', accountId },
      context: {
        partnerId: request.partner_id,
        actor: { kind: 'system', service: 'ai-agent' },
        correlationId: request.id,
      },
      lockKeys: [`account:${accountId}`],
      consistency: 'partition',
      async decide(trx) {
        const account = await trx
          .selectFrom('accounts')
          .selectAll()
          .where('id', '=', accountId)
          .executeTakeFirstOrThrow();
        const state = await conversationState(trx, account, phone);
        const { enrollment_id, sequence_id, step_order } = request.data;
        const events = decideSendMessage(
          {
            type: 'SendMessage',
            message_id: newUuid(),
            phone,
            body: 'Could you send your latest pay stub?',
            source: 'sequence',
            sender_name: null,
            sequence_step: { enrollment_id, sequence_id, step_order },
          },
          state,
          clock.now(),
        );
        return { events, result: undefined };
      },
    });
    await eventually(async () =>
      (await leadOf(accountId, phone)).sequence?.current_step === 1 ? true : undefined,
    );
    clock.advance(HOUR);
    await settled(run);
    await eventually(async () => ((await requested()).length === 2 ? true : undefined));
    const second = (await requested())[1]!;
    if (second.type !== 'sequence.ai_step_requested') throw new Error('unreachable');
    // The agent cannot write this one: the step is skipped.
    await system.services.commands.append({
      stream: { topic: 'account', accountId },
      context: {
        partnerId: second.partner_id,
        actor: { kind: 'system', service: 'ai-agent' },
        correlationId: second.id,
      },
      events: [
        {
          type: 'sequence.ai_step_failed',
          data: {
            enrollment_id: second.data.enrollment_id,
            sequence_id: second.data.sequence_id,
            step_order: second.data.step_order,
            phone,
            reason: 'ai_unavailable',
          },
        },
      ],
    });
    await eventually(async () =>
      (await leadOf(accountId, phone)).sequence?.current_step === 2 ? true : undefined,
    );
    clock.advance(HOUR);
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Could you send your latest pay stub?', 'Bye']);
    expect((await leadOf(accountId, phone)).sequence.status).toBe('completed');
  });

  it("parks a record it cannot read and still decides the AI step's answer behind it on that partition", async () => {
    const run = await sequencer();
    const { accountId, sequenceId } = await setUp({
      name: 'AI',
      steps: [
        { type: 'ai', instructions: 'Ask for the pay stub.' },
        { type: 'fixed', message: 'Bye', delay_hours: 1 },
      ],
    });
    const { phone } = await enrolledLead(accountId, sequenceId);
    const request = (await accountEvents(system.services)).find(
      (event) => event.type === 'sequence.ai_step_requested' && event.account_id === accountId,
    );
    if (request?.type !== 'sequence.ai_step_requested') throw new Error('no AI step requested');

    // A record no codec can read, claiming to be an AI step's answer (a broken producer, a corrupted
    // copy), on the account's partition under another account's key.
    const topic = system.services.topics.account;
    const partitions = (await system.services.admin.fetchTopicOffsets(topic)).length;
    const partition = partitionForKey(topic, accountId, partitions);
    const producer = system.services.kafka.producer();
    await producer.connect();
    await producer.send({
      topic,
      messages: [
        {
          key: newUuid(),
          partition,
          value: Buffer.from('not an event'),
          headers: { 'event-type': 'sequence.ai_step_failed' },
        },
      ],
    });
    await producer.disconnect();
    // Then the agent's answer behind it: it could not write the step.
    await system.services.commands.append({
      stream: { topic: 'account', accountId },
      context: {
        partnerId: request.partner_id,
        actor: { kind: 'system', service: 'ai-agent' },
        correlationId: request.id,
      },
      events: [
        {
          type: 'sequence.ai_step_failed',
          data: {
            enrollment_id: request.data.enrollment_id,
            sequence_id: request.data.sequence_id,
            step_order: request.data.step_order,
            phone,
            reason: 'ai_unavailable',
          },
        },
      ],
    });

    // The answer is decided: the step is skipped and the enrollment moves on to the next one,
    await eventually(async () =>
      (await leadOf(accountId, phone)).sequence?.current_step === 1 ? true : undefined,
    );
    clock.advance(HOUR);
    await settled(run);
    expect(await bodiesOf(accountId, phone)).toEqual(['Bye']);
    // and the unreadable record waits for an operator, who lists and skips it as any consumer's.
    const parkedBySequencer = async () =>
      (await listParked(claimsDb)).filter((row) => row.consumer === 'sequencer');
    const [parked, ...others] = await eventually(async () => {
      const rows = await parkedBySequencer();
      return rows.length > 0 ? rows : undefined;
    });
    expect(others).toEqual([]);
    expect(parked).toMatchObject({ topic, partition, status: 'parked', event_type: null });
    expect(await skipParked(claimsDb, parked!, 'unreadable record', clock.now())).toBe(true);
    expect(await parkedBySequencer()).toEqual([]);
  });
});

describe('upgrading to checkpoints in Postgres', () => {
  it("continues where the consumer group's committed offsets left off, not from the log's start", async () => {
    const { accountId, sequenceId } = await setUp({
      name: 'AI',
      steps: [
        { type: 'ai', instructions: 'Ask for the pay stub.' },
        { type: 'fixed', message: 'Bye', delay_hours: 1 },
      ],
    });
    const { phone } = await enrolledLead(accountId, sequenceId);
    const request = (await accountEvents(system.services)).find(
      (event) => event.type === 'sequence.ai_step_requested' && event.account_id === accountId,
    );
    if (request?.type !== 'sequence.ai_step_requested') throw new Error('no AI step requested');
    const failed = (reason: string) =>
      system.services.commands.append({
        stream: { topic: 'account', accountId },
        context: {
          partnerId: request.partner_id,
          actor: { kind: 'system', service: 'ai-agent' },
          correlationId: request.id,
        },
        events: [
          {
            type: 'sequence.ai_step_failed',
            data: {
              enrollment_id: request.data.enrollment_id,
              sequence_id: request.data.sequence_id,
              step_order: request.data.step_order,
              phone,
              reason,
            },
          },
        ],
      });
    const answerIds = async () =>
      (await accountEvents(system.services))
        .filter((event) => event.type === 'sequence.ai_step_failed' && event.account_id === accountId)
        .map((event) => event.id);

    // Given a sequencer of the previous version that had read the log up to here (its position in
    // its consumer group's committed offsets) and a table of checkpoints still empty,
    await failed('model_error');
    const topic = system.services.topics.account;
    const groupId = `${system.env.config.TOPIC_PREFIX}leadline.sequencer-upgraded`;
    await system.services.admin.setOffsets({
      groupId,
      topic,
      partitions: (await system.services.admin.fetchTopicOffsets(topic)).map(({ partition, high }) => ({
        partition,
        offset: high,
      })),
    });
    await claimsDb.deleteFrom('sequencer_checkpoints').execute();
    // when the new version starts and the agent answers again,
    await sequencer(system.services.commands, 60_000, groupId);
    await failed('ai_unavailable');
    // then the answer it decides is the one after that position: the one before it is not read again.
    await eventually(async () =>
      (await leadOf(accountId, phone)).sequence?.current_step === 1 ? true : undefined,
    );
    const [, after] = await answerIds();
    const skipped = (await accountEvents(system.services)).filter(
      (event) => event.type === 'sequence.step_skipped' && event.account_id === accountId,
    );
    expect(skipped).toMatchObject([{ causation_id: after, data: { step_order: 0, reason: 'ai_failed' } }]);
  });
});
