import { newUuid, type CommandBus } from '@leadline/runtime';
import { accountEvents, eventually } from '@leadline/test-kit';
import { describe, expect, it } from 'vitest';
import { claimDueSteps } from '../src';
import {
  HOUR,
  clock,
  system,
  acme,
  claimsDb,
  sequencer,
  useSequencerSystem,
  phoneNumber,
  nextPhone,
  threeSteps,
  setUp,
  leadOf,
  inbound,
  settled,
} from './sequencer-system';

useSequencerSystem();

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
    const miami = phoneNumber('+1305555');
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
    const losAngeles = phoneNumber('+1213555');
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
    const newOrleans = phoneNumber('+1504555');
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
