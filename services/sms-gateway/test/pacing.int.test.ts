import { scrapeMetrics } from '@leadline/runtime';
import { accountEvents, eventually } from '@leadline/test-kit';
import { describe, expect, it } from 'vitest';
import { gatewayHarness } from './harness';

const { harness, append, gateway, account, request, outboxRow } = gatewayHarness(
  new Date('2026-03-02T15:00:00Z'),
);

const sentFrom = (from: string) => harness.twilio.messages.filter((message) => message.from === from);
const oneASecond = { messagesPerSecond: 1, brandDailyCap: null };
/**
 * A look for a hold that a cap makes, dispatching first as the poll loop would, with the clock moving
 * a second a look as it would meanwhile. On a busy host the pass that reaches the hold may not be the
 * test's: the gateway's own pass can still hold the account's claim when the test dispatches, and hand
 * the rows back after it (due at once, but then only the 60 s poll would claim them), or wait out the
 * projector and hand them back for a second or more (the backoff, on this clock, which a standing clock
 * never makes due). The caps' days end at midnight Pacific, hours ahead: the holds asserted are the
 * same.
 */
const dispatchedUntil =
  <T>(running: { dispatch(): Promise<unknown> }, look: () => Promise<T | undefined>) =>
  async () => {
    harness.clock.advance(1000);
    await running.dispatch();
    return look();
  };
const drainMax = async () =>
  Number(/^leadline_sms_number_drain_seconds_max (\S+)$/m.exec(await scrapeMetrics())?.[1]);

describe('pacing each number', () => {
  it("spaces one number's burst a second apart, while another account's message goes at once", async () => {
    await account('acc-burst', '+15125553101');
    await account('acc-other', '+15125553102');
    const running = await gateway({ pacing: oneASecond });
    const burst = Array.from({ length: 5 }, (_, i) => request(`+1512555420${i}`, `Step ${i}`));
    await append('acc-burst', burst);
    const single = request('+15125554299', 'Your appraisal is in');
    await append('acc-other', [single]);

    await eventually(async () =>
      (await outboxRow(single.data.message_id))?.state === 'sent' ? true : undefined,
    );
    await eventually(async () =>
      (await outboxRow(burst[0]!.data.message_id))?.state === 'sent' ? true : undefined,
    );
    await running.dispatch();
    expect(sentFrom('+15125553101')).toHaveLength(1);
    expect(sentFrom('+15125553102')).toHaveLength(1);

    // One more each second of the clock, never two; in the order they were requested.
    for (let second = 1; second < 5; second++) {
      harness.clock.advance(999);
      await running.dispatch();
      expect(sentFrom('+15125553101')).toHaveLength(second);
      harness.clock.advance(1);
      await running.dispatch();
      expect(sentFrom('+15125553101')).toHaveLength(second + 1);
    }
    expect(sentFrom('+15125553101').map((message) => message.body)).toEqual(burst.map((r) => r.data.body));
  });

  it('sends a backlog at its slots in one pass, waiting on the clock: each send on the log before the next slot', async () => {
    await account('acc-waits', '+15125553109');
    // The clock's own timers: the pass waits for each slot until the test moves the clock there.
    const running = await gateway({ pacing: oneASecond, timers: harness.clock, slotWaitMs: 2000 });
    const burst = Array.from({ length: 3 }, (_, i) => request(`+1512555490${i}`, `Waits ${i}`));
    await append('acc-waits', burst);
    const sentOnLog = async () =>
      (await accountEvents(harness.services)).flatMap((event) =>
        event.type === 'message.sent' && event.account_id === 'acc-waits'
          ? [[event.data.message_id, event.occurred_at]]
          : [],
      );
    const slots: string[] = [];
    for (let sent = 1; sent <= 3; sent++) {
      await eventually(async () => (sentFrom('+15125553109').length === sent ? true : undefined));
      slots.push(harness.clock.now().toISOString());
      if (sent === 3) break;
      // While the pass waits for the next slot, what it sent is on the log already (a partner's
      // message.sent follows the send by a slot at most, not by the whole pass).
      await eventually(async () => ((await sentOnLog()).length === sent ? true : undefined));
      harness.clock.advance(1000);
    }
    await eventually(async () => ((await sentOnLog()).length === 3 ? true : undefined));
    await running.dispatch();
    expect(sentFrom('+15125553109').map((message) => message.body)).toEqual(burst.map((r) => r.data.body));
    expect(await sentOnLog()).toEqual(burst.map((r, i) => [r.data.message_id, slots[i]]));
    // One pass held the account's claim through the slots: the three rows went out under one claim.
    const claims = await Promise.all(
      burst.map(async (r) => (await outboxRow(r.data.message_id))?.claim_token),
    );
    expect(new Set(claims).size).toBe(1);
    expect(claims[0]).toBeTruthy();
  });

  it("does not wait for a slot while no other worker is free: another account's message goes", async () => {
    await account('acc-one-worker', '+15125553110');
    await account('acc-one-worker-other', '+15125553111');
    const running = await gateway({
      pacing: oneASecond,
      timers: harness.clock,
      slotWaitMs: 2000,
      concurrency: 1,
    });
    const burst = Array.from({ length: 2 }, (_, i) => request(`+1512555491${i}`, `Backlog ${i}`));
    await append('acc-one-worker', burst);
    await eventually(async () =>
      (await outboxRow(burst[0]!.data.message_id))?.state === 'sent' ? true : undefined,
    );
    const single = request('+15125554919', 'Your appraisal is in');
    await append('acc-one-worker-other', [single]);
    // The clock stands still: a pass waiting for the backlog's next slot would keep the only worker.
    await eventually(async () =>
      (await outboxRow(single.data.message_id))?.state === 'sent' ? true : undefined,
    );
    await running.dispatch();
    expect(sentFrom('+15125553110')).toHaveLength(1);
  });

  it("spaces an account's number by its own sending rate, while an account at the default stays a second apart", async () => {
    const start = harness.clock.now();
    await account('acc-fast', '+15125553105', { sending_rate: { messages_per_second: 2, daily_cap: null } });
    await account('acc-default', '+15125553106');
    const running = await gateway({ pacing: oneASecond });
    const fast = Array.from({ length: 6 }, (_, i) => request(`+1512555450${i}`, `Fast ${i}`));
    const slow = Array.from({ length: 3 }, (_, i) => request(`+1512555460${i}`, `Default ${i}`));
    await append('acc-fast', fast);
    await append('acc-default', slow);
    await eventually(async () =>
      (await outboxRow(fast[0]!.data.message_id))?.state === 'sent' ? true : undefined,
    );
    await eventually(async () =>
      (await outboxRow(slow[0]!.data.message_id))?.state === 'sent' ? true : undefined,
    );
    await running.dispatch();
    expect(sentFrom('+15125553105')).toHaveLength(1);
    expect(sentFrom('+15125553106')).toHaveLength(1);
    // The longest expected drain: the fast number's five left, half a second apart after its next slot
    // (0.5 + 4 x 0.5 s), is longer than the default's two (1 + 1 s); at the default pace it would be 5 s.
    expect(await drainMax()).toBe(2.5);

    // Half a second: the account at 2 a second sends its next, the other waits for its full second.
    for (const [elapsed, fastSent, defaultSent] of [
      [499, 1, 1],
      [500, 2, 1],
      [999, 2, 1],
      [1000, 3, 2],
      [1500, 4, 2],
      [2000, 5, 3],
      [2500, 6, 3],
    ] as const) {
      harness.clock.set(new Date(start.getTime() + elapsed));
      await running.dispatch();
      expect([elapsed, sentFrom('+15125553105').length, sentFrom('+15125553106').length]).toEqual([
        elapsed,
        fastSent,
        defaultSent,
      ]);
    }
    expect(sentFrom('+15125553105').map((message) => message.body)).toEqual(fast.map((r) => r.data.body));
  });

  it("holds past the account's own daily cap where the deployment sets none", async () => {
    await account('acc-own-cap', '+15125553107', {
      sending_rate: { messages_per_second: null, daily_cap: 1 },
    });
    const running = await gateway({ pacing: oneASecond });
    const messages = Array.from({ length: 2 }, (_, i) => request(`+1512555470${i}`, `Capped ${i}`));
    await append('acc-own-cap', messages);
    await eventually(async () =>
      (await outboxRow(messages[0]!.data.message_id))?.state === 'sent' ? true : undefined,
    );
    await eventually(
      dispatchedUntil(running, async () => {
        const row = await outboxRow(messages[1]!.data.message_id);
        return row?.hold_reason === 'brand_daily_cap' ? true : undefined;
      }),
      { timeoutMs: 60_000 },
    );
    expect(sentFrom('+15125553107').map((message) => message.body)).toEqual(['Capped 0']);
  });

  it("holds what exceeds the brand's daily cap until the carriers' next day, and says so; a STOP confirmation still goes", async () => {
    await account('acc-capped', '+15125553103');
    const running = await gateway({ pacing: { messagesPerSecond: 10, brandDailyCap: 2 } });
    const messages = Array.from({ length: 3 }, (_, i) => request(`+1512555430${i}`, `Reminder ${i}`));
    await append('acc-capped', messages);
    await eventually(async () =>
      (await outboxRow(messages[0]!.data.message_id))?.state === 'sent' ? true : undefined,
    );
    for (let i = 0; i < 2; i++) {
      harness.clock.advance(100);
      await running.dispatch();
    }
    await eventually(
      dispatchedUntil(running, async () => {
        const row = await outboxRow(messages[2]!.data.message_id);
        return row?.hold_reason === 'brand_daily_cap' ? true : undefined;
      }),
      { timeoutMs: 60_000 },
    );
    expect(sentFrom('+15125553103').map((message) => message.body)).toEqual(['Reminder 0', 'Reminder 1']);
    const held = (await accountEvents(harness.services)).filter(
      (event) => event.type === 'message.held' && event.account_id === 'acc-capped',
    );
    expect(held.map((event) => event.data)).toEqual([
      {
        message_id: messages[2]!.data.message_id,
        phone: '+15125554302',
        reason: 'brand_daily_cap',
        // Midnight Pacific.
        next_attempt_at: '2026-03-03T08:00:00.000Z',
      },
    ]);

    const confirmation = request('+15125554309', 'Gateway Co: You are unsubscribed.', {
      source: 'system',
      answers: 'opt_out',
    });
    await append('acc-capped', [confirmation]);
    await eventually(async () =>
      (await outboxRow(confirmation.data.message_id))?.state === 'sent' ? true : undefined,
    );
    expect((await outboxRow(messages[2]!.data.message_id))?.state).toBe('pending');
  });

  it('holds a sequence step that cannot leave before the window closes until it opens again, rather than at its edge', async () => {
    // 20:59:58 in New York, where the leads (212) are.
    harness.clock.set(new Date('2026-03-03T01:59:58.000Z'));
    await account('acc-evening', '+15125553104');
    const running = await gateway({ pacing: oneASecond });
    const steps = Array.from({ length: 3 }, (_, i) =>
      request(`+1212555440${i}`, `Evening step ${i}`, { source: 'sequence' }),
    );
    await append('acc-evening', steps);
    await eventually(async () =>
      (await outboxRow(steps[0]!.data.message_id))?.state === 'sent' ? true : undefined,
    );
    harness.clock.advance(1000);
    await running.dispatch();
    harness.clock.advance(1000);
    await running.dispatch();
    // The third's slot is 21:00:00, when the window has closed.
    expect(sentFrom('+15125553104').map((message) => message.body)).toEqual([
      'Evening step 0',
      'Evening step 1',
    ]);
    expect(await outboxRow(steps[2]!.data.message_id)).toMatchObject({
      state: 'pending',
      hold_reason: 'quiet_hours',
      held_until: new Date('2026-03-03T13:00:00.000Z'),
    });
    const held = (await accountEvents(harness.services)).filter(
      (event) => event.type === 'message.held' && event.account_id === 'acc-evening',
    );
    expect(held.map((event) => event.data)).toEqual([
      {
        message_id: steps[2]!.data.message_id,
        phone: '+12125554402',
        reason: 'quiet_hours',
        next_attempt_at: '2026-03-03T13:00:00.000Z',
      },
    ]);

    harness.clock.set(new Date('2026-03-03T12:59:59.000Z'));
    await running.dispatch();
    expect(sentFrom('+15125553104')).toHaveLength(2);
    harness.clock.set(new Date('2026-03-03T13:00:00.000Z'));
    await running.dispatch();
    expect(sentFrom('+15125553104').map((message) => message.body)).toEqual([
      'Evening step 0',
      'Evening step 1',
      'Evening step 2',
    ]);
  });

  it('says so again when a message held past the cap is held again for the same reason, with its new time', async () => {
    harness.clock.set(new Date('2026-03-03T16:00:00.000Z'));
    await account('acc-recapped', '+15125553108');
    const running = await gateway({ pacing: { messagesPerSecond: 10, brandDailyCap: 1 } });
    // Sequence steps: a manual message would fail rather than wait a day (its queue age).
    const messages = Array.from({ length: 3 }, (_, i) =>
      request(`+1512555480${i}`, `Recap ${i}`, { source: 'sequence' }),
    );
    await append('acc-recapped', messages);
    const heldPastCap = (n: number, until: string) => async () => {
      const row = await outboxRow(messages[n]!.data.message_id);
      return row?.hold_reason === 'brand_daily_cap' && row.held_until?.toISOString() === until
        ? true
        : undefined;
    };
    await eventually(async () =>
      (await outboxRow(messages[0]!.data.message_id))?.state === 'sent' ? true : undefined,
    );
    harness.clock.advance(100);
    await running.dispatch();
    await eventually(dispatchedUntil(running, heldPastCap(2, '2026-03-04T08:00:00.000Z')), {
      timeoutMs: 60_000,
    });

    // The carriers' next day: one more goes, and the last is held until the day after.
    harness.clock.set(new Date('2026-03-04T16:00:00.000Z'));
    await running.dispatch();
    await eventually(async () =>
      (await outboxRow(messages[1]!.data.message_id))?.state === 'sent' ? true : undefined,
    );
    harness.clock.advance(100);
    await running.dispatch();
    await eventually(dispatchedUntil(running, heldPastCap(2, '2026-03-05T08:00:00.000Z')), {
      timeoutMs: 60_000,
    });

    const held = (await accountEvents(harness.services)).filter(
      (event) => event.type === 'message.held' && event.account_id === 'acc-recapped',
    );
    const heldUntil = (next_attempt_at: string) => ({
      message_id: messages[2]!.data.message_id,
      phone: '+15125554802',
      reason: 'brand_daily_cap',
      next_attempt_at,
    });
    expect(held.map((event) => event.data)).toContainEqual(heldUntil('2026-03-04T08:00:00.000Z'));
    expect(held.map((event) => event.data)).toContainEqual(heldUntil('2026-03-05T08:00:00.000Z'));
  });
});
