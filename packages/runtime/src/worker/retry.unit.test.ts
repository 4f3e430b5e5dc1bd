import { describe, expect, it } from 'vitest';
import { backoffMs, nextAttempt, retryDelayMs, type RetryPolicy } from './retry';

const now = new Date('2026-03-08T10:00:00.000Z');
const later = (ms: number) => new Date(now.getTime() + ms);

const exponential: RetryPolicy = {
  backoff: { kind: 'exponential', baseMs: 1000, maxMs: 60_000 },
  jitter: 'full',
  maxAttempts: Number.POSITIVE_INFINITY,
  retryable: 'all',
};
const schedule: RetryPolicy = {
  backoff: { kind: 'schedule', delaysMs: [30_000, 120_000] },
  jitter: 'none',
  maxAttempts: Number.POSITIVE_INFINITY,
  retryable: 'all',
  maxNotBeforeMs: 86_400_000,
};

describe('the retry backoff', () => {
  it('doubles from its base up to its cap, and follows a schedule to its end', () => {
    expect([0, 1, 2, 5, 6, 7, 2000].map((retries) => backoffMs(exponential, retries))).toEqual([
      1000, 2000, 4000, 32_000, 60_000, 60_000, 60_000,
    ]);
    expect([0, 1, 2].map((retries) => backoffMs(schedule, retries))).toEqual([30_000, 120_000, undefined]);
  });

  it('with full jitter draws each delay between 0 and the backoff, spread over that whole range', () => {
    let seed = 7;
    // A small deterministic generator: the test is about the bounds, not about Math.random.
    const random = () => ((seed = (seed * 16_807) % 2_147_483_647) - 1) / 2_147_483_646;
    for (const retries of [0, 3, 10]) {
      const cap = backoffMs(exponential, retries)!;
      const delays = Array.from({ length: 2000 }, () => retryDelayMs(exponential, retries, random)!);
      expect(Math.min(...delays)).toBeGreaterThanOrEqual(0);
      expect(Math.max(...delays)).toBeLessThanOrEqual(cap);
      // Spread, not clustered: both ends of the range are reached and the middle is near half the cap.
      expect(Math.min(...delays)).toBeLessThan(cap * 0.05);
      expect(Math.max(...delays)).toBeGreaterThan(cap * 0.95);
      const mean = delays.reduce((sum, delay) => sum + delay, 0) / delays.length;
      expect(mean / cap).toBeGreaterThan(0.45);
      expect(mean / cap).toBeLessThan(0.55);
    }
    expect(retryDelayMs(exponential, 2, () => 0)).toBe(0);
    expect(retryDelayMs(exponential, 2, () => 1)).toBe(4000);
  });

  it('with equal jitter never waits less than half the backoff, and at most all of it', () => {
    const equal = { ...exponential, jitter: 'equal' as const };
    expect(retryDelayMs(equal, 2, () => 0)).toBe(2000);
    expect(retryDelayMs(equal, 2, () => 1)).toBe(4000);
    expect(retryDelayMs(equal, 2, () => 0.5)).toBe(3000);
  });

  it('without jitter is exactly the schedule', () => {
    expect(retryDelayMs(schedule, 1, () => 0.3)).toBe(120_000);
  });
});

describe('the next attempt', () => {
  it('retries after the delay, then gives up when the schedule ends', () => {
    expect(nextAttempt(schedule, { error: 'HTTP 500', retriesDone: 0 }, now)).toEqual({
      kind: 'retry',
      at: later(30_000),
    });
    expect(nextAttempt(schedule, { error: 'HTTP 500', retriesDone: 2 }, now)).toEqual({ kind: 'exhausted' });
  });

  it('stops after the maximum attempts, counting the first', () => {
    const three = { ...exponential, maxAttempts: 3 };
    expect(nextAttempt(three, { error: 'x', retriesDone: 1 }, now, () => 1)).toEqual({
      kind: 'retry',
      at: later(2000),
    });
    expect(nextAttempt(three, { error: 'x', retriesDone: 2 }, now)).toEqual({ kind: 'exhausted' });
  });

  it('stops once the first failure is older than the policy allows', () => {
    const patient = { ...exponential, giveUpAfterMs: 600_000 };
    const failure = { error: 'model down', retriesDone: 4 };
    expect(nextAttempt(patient, { ...failure, firstFailureAt: later(-599_999) }, now).kind).toBe('retry');
    expect(nextAttempt(patient, { ...failure, firstFailureAt: later(-600_000) }, now)).toEqual({
      kind: 'exhausted',
    });
  });

  it('retries only what the policy counts as retryable, and never a failure the queue calls final', () => {
    const transient = { ...exponential, retryable: 'transient' as const };
    const outage = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect(nextAttempt(transient, { error: outage, retriesDone: 0 }, now).kind).toBe('retry');
    expect(nextAttempt(transient, { error: new Error('bad input'), retriesDone: 0 }, now)).toEqual({
      kind: 'not_retryable',
    });
    const picky = { ...exponential, retryable: (error: unknown) => error === 'again' };
    expect(nextAttempt(picky, { error: 'again', retriesDone: 0 }, now).kind).toBe('retry');
    expect(nextAttempt(picky, { error: 'never', retriesDone: 0 }, now).kind).toBe('not_retryable');
    expect(nextAttempt(exponential, { error: 'HTTP 410', retryable: false, retriesDone: 0 }, now)).toEqual({
      kind: 'not_retryable',
    });
  });

  it("honours the peer's own wait when it is longer, up to the policy's bound", () => {
    const at = (notBeforeMs: number) =>
      nextAttempt(schedule, { error: 'HTTP 503', retriesDone: 0, notBeforeMs }, now);
    expect(at(90_000)).toEqual({ kind: 'retry', at: later(90_000) });
    expect(at(5000)).toEqual({ kind: 'retry', at: later(30_000) });
    expect(at(10 ** 12)).toEqual({ kind: 'retry', at: later(86_400_000) });
  });
});
