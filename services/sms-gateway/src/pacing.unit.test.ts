import { DEFAULT_SENDING_WINDOW } from '@leadline/domain';
import { describe, expect, it } from 'vitest';
import {
  accountPaceSettings,
  afterCall,
  carrierDay,
  drainSeconds,
  nextCarrierDay,
  paceDecision,
  type PaceSettings,
  type PaceState,
} from './pacing';

// 10:00 in New York, 07:00 in California (winter).
const now = new Date('2026-03-02T15:00:00.000Z');
const at = (ms: number) => new Date(now.getTime() + ms);
const oneASecond: PaceSettings = { messagesPerSecond: 1, brandDailyCap: null };
const manual = { phone: '+12125550100', proactive: false, compliance: false };
const step = { ...manual, proactive: true };
const decide = (pace: PaceState | undefined, fields: Partial<Parameters<typeof paceDecision>[0]> = {}) =>
  paceDecision({
    now,
    settings: oneASecond,
    pace,
    message: manual,
    window: DEFAULT_SENDING_WINDOW,
    ...fields,
  });

describe("a number's pace", () => {
  it('sends the first message at once and spaces the next by the number’s throughput', () => {
    const first = decide(undefined);
    expect(first).toEqual({
      kind: 'send',
      at: now,
      pace: { nextSendAt: at(1000), capDay: '2026-03-02', sentOnCapDay: 1 },
    });
    const pace = first.kind === 'send' ? first.pace : undefined;
    expect(decide(pace)).toEqual({ kind: 'wait', until: at(1000) });
    expect(decide(pace, { now: at(999) })).toEqual({ kind: 'wait', until: at(1000) });
    expect(decide(pace, { now: at(1000) })).toMatchObject({ kind: 'send', pace: { nextSendAt: at(2000) } });
    // At 4 a second, a quarter of a second apart.
    expect(decide(undefined, { settings: { messagesPerSecond: 4, brandDailyCap: null } })).toMatchObject({
      pace: { nextSendAt: at(250) },
    });
  });

  it('never bursts to catch up after a quiet spell: the next slot counts from the send', () => {
    const idle = { nextSendAt: at(-60_000), capDay: '2026-03-02', sentOnCapDay: 5 };
    expect(decide(idle)).toEqual({
      kind: 'send',
      at: now,
      pace: { nextSendAt: at(1000), capDay: '2026-03-02', sentOnCapDay: 6 },
    });
  });

  it('claims a slot within the claim-ahead time now, to leave at the slot; a later one still waits', () => {
    const busy = { nextSendAt: at(40), capDay: '2026-03-02', sentOnCapDay: 1 };
    expect(decide(busy, { aheadMs: 50 })).toEqual({
      kind: 'send',
      at: at(40),
      pace: { nextSendAt: at(1040), capDay: '2026-03-02', sentOnCapDay: 2 },
    });
    expect(decide(busy, { aheadMs: 39 })).toEqual({ kind: 'wait', until: at(40) });
  });

  it('counts the next slot from the provider call when the call was later than its slot', () => {
    const claimed = { nextSendAt: at(1000), capDay: '2026-03-02', sentOnCapDay: 1 };
    // Called 30 ms after its slot (now): the next slot is a full second after the call.
    expect(afterCall(claimed, at(30), oneASecond)).toEqual({ ...claimed, nextSendAt: at(1030) });
    // Called on time: the slot claimed stands.
    expect(afterCall(claimed, now, oneASecond)).toBe(claimed);
    expect(decide(afterCall(claimed, at(30), oneASecond), { now: at(1000) })).toEqual({
      kind: 'wait',
      until: at(1030),
    });
  });
});

describe("the brand's daily cap", () => {
  const capped: PaceSettings = { messagesPerSecond: 1, brandDailyCap: 2 };
  const full = { nextSendAt: now, capDay: '2026-03-02', sentOnCapDay: 2 };

  it('holds a message past the cap until the carriers’ next day (midnight Pacific)', () => {
    expect(decide(full, { settings: capped })).toEqual({
      kind: 'hold',
      reason: 'brand_daily_cap',
      until: new Date('2026-03-03T08:00:00.000Z'),
    });
    expect(decide({ ...full, sentOnCapDay: 1 }, { settings: capped })).toMatchObject({
      kind: 'send',
      pace: { sentOnCapDay: 2 },
    });
  });

  it('counts afresh on a new day, and never holds a compliance reply', () => {
    expect(decide({ ...full, capDay: '2026-03-01' }, { settings: capped })).toMatchObject({
      kind: 'send',
      pace: { capDay: '2026-03-02', sentOnCapDay: 1 },
    });
    expect(decide(full, { settings: capped, message: { ...manual, compliance: true } })).toMatchObject({
      kind: 'send',
      pace: { sentOnCapDay: 3 },
    });
  });

  it('reads the carriers’ day in Pacific time, across the change to summer time', () => {
    expect(carrierDay(new Date('2026-03-03T07:59:59.000Z'))).toBe('2026-03-02');
    expect(carrierDay(new Date('2026-03-03T08:00:00.000Z'))).toBe('2026-03-03');
    // Summer time starts on 8 March 2026: the midnight after it is at 07:00 UTC.
    expect(nextCarrierDay(new Date('2026-03-08T12:00:00.000Z'))).toEqual(
      new Date('2026-03-09T07:00:00.000Z'),
    );
    expect(nextCarrierDay(new Date('2026-03-07T12:00:00.000Z'))).toEqual(
      new Date('2026-03-08T08:00:00.000Z'),
    );
  });
});

describe('the sending window at the number’s pace', () => {
  // 20:59:59.5 in New York: the window (08:00 to 21:00, the lead's local time) closes in half a second.
  const edge = new Date('2026-03-03T01:59:59.500Z');
  const busyUntil = (ms: number) => ({
    nextSendAt: new Date(edge.getTime() + ms),
    capDay: '2026-03-02',
    sentOnCapDay: 10,
  });

  it('holds a sequence step whose slot falls after the window closed until the window opens again', () => {
    expect(decide(busyUntil(1000), { now: edge, message: step })).toEqual({
      kind: 'hold',
      reason: 'quiet_hours',
      until: new Date('2026-03-03T13:00:00.000Z'),
    });
  });

  it('sends a sequence step whose slot is still inside it, and lets a manual message wait for its slot', () => {
    expect(decide(busyUntil(-1), { now: edge, message: step })).toMatchObject({ kind: 'send' });
    expect(decide(busyUntil(1000), { now: edge, message: manual })).toEqual({
      kind: 'wait',
      until: new Date(edge.getTime() + 1000),
    });
  });

  it('holds a step for a lead whose state’s hours ended, though the account’s window is open', () => {
    // 20:30 in Austin, Texas: the account's window is open until 21:00, Texas allows until 21:00 too;
    // a Florida number (305) at 20:30 in Miami is past Florida's 20:00.
    const evening = new Date('2026-03-03T01:30:00.000Z');
    expect(decide(undefined, { now: evening, message: { ...step, phone: '+13055550100' } })).toMatchObject({
      kind: 'hold',
      reason: 'state_hours',
    });
  });
});

describe('how long a number’s queue takes to drain', () => {
  it('is its next slot, then one spacing per message after the first', () => {
    expect(drainSeconds({ depth: 3000, nextSendAt: at(500) }, oneASecond, now)).toBe(2999.5);
    expect(drainSeconds({ depth: 1, nextSendAt: at(-5000) }, oneASecond, now)).toBe(0);
    expect(drainSeconds({ depth: 10, nextSendAt: null }, undefined, now)).toBe(0);
  });
});

describe("an account's pace settings", () => {
  const deployment: PaceSettings = { messagesPerSecond: 1, brandDailyCap: 5000 };
  const unset = { messages_per_second: null, daily_cap: null };

  it("takes each of the account's settings that is set, else the deployment's", () => {
    expect(accountPaceSettings(deployment, unset)).toEqual(deployment);
    expect(accountPaceSettings(deployment, { messages_per_second: 2, daily_cap: null })).toEqual({
      messagesPerSecond: 2,
      brandDailyCap: 5000,
    });
    expect(accountPaceSettings(deployment, { messages_per_second: null, daily_cap: 200 })).toEqual({
      messagesPerSecond: 1,
      brandDailyCap: 200,
    });
  });

  it("spaces an account's number by its own rate", () => {
    const settings = accountPaceSettings(deployment, { messages_per_second: 2, daily_cap: null })!;
    const first = paceDecision({
      now,
      settings,
      pace: undefined,
      message: manual,
      window: DEFAULT_SENDING_WINDOW,
    });
    expect(first).toMatchObject({ kind: 'send', pace: { nextSendAt: at(500) } });
  });

  it('paces only the accounts that set a rate or a cap where the deployment does not pace', () => {
    expect(accountPaceSettings(undefined, unset)).toBeUndefined();
    expect(accountPaceSettings(undefined, { messages_per_second: null, daily_cap: 10 })).toEqual({
      messagesPerSecond: Number.POSITIVE_INFINITY,
      brandDailyCap: 10,
    });
    expect(accountPaceSettings(undefined, { messages_per_second: 4, daily_cap: null })).toEqual({
      messagesPerSecond: 4,
      brandDailyCap: null,
    });
  });
});
