import { isTransientFailure } from '../parking';

/**
 * When a failed item is tried again, and when it is not: data each queue states once, applied by one
 * pure function. The queue stores the decision (its own columns: a delivery's next attempt, a turn's due
 * time, a row's lease); the runtime never keeps an item's history in memory.
 */
export interface RetryPolicy {
  /**
   * The delay before each retry: a fixed schedule (the n-th retry waits the n-th delay; a specification
   * may fix it, as the partner webhooks' 30 s, 2 min, 10 min, 1 h, 4 h) or an exponential backoff.
   */
  backoff:
    | { kind: 'schedule'; delaysMs: readonly number[] }
    | { kind: 'exponential'; baseMs: number; maxMs: number; factor?: number };
  /**
   * `full`: each delay is drawn uniformly between 0 and the backoff's, so items that failed together
   * (a provider's outage) do not all come back at the same instant. `equal`: half the backoff, plus a
   * uniform draw of the other half (spread, yet never sooner than half: for a provider that must be
   * given time). `none`: exactly the backoff's, for a schedule a specification fixes.
   */
  jitter: 'full' | 'equal' | 'none';
  /** Attempts in all, the first included (Infinity: until it succeeds; a schedule also ends with its last delay). */
  maxAttempts: number;
  /** No retry once the first failure is this old (measured by the queue's own record of it). */
  giveUpAfterMs?: number;
  /** Which failures are worth another attempt: every one, or only the infrastructure's (`isTransientFailure`). */
  retryable: 'all' | 'transient' | ((error: unknown) => boolean);
  /** A peer's own wait (Retry-After) is honoured when longer than the delay, up to this. */
  maxNotBeforeMs?: number;
}

/** What became of an attempt that did not succeed, as the queue judges it. */
export interface Failure {
  error: unknown;
  /** Overrides the policy's `retryable` (a 410 Gone is final whatever the policy says). */
  retryable?: boolean;
  /** The earliest next attempt the peer asked for, from now (Retry-After). */
  notBeforeMs?: number | null;
}

/**
 * What follows a failed attempt: another one at `at`; none because the policy's attempts (or time)
 * ran out (`exhausted`); none because the failure is final (`not_retryable`). What the queue does
 * after the last attempt (a delivery failed and reported, a turn handed off) is its `settle`'s.
 */
export type RetryDecision = { kind: 'retry'; at: Date } | { kind: 'exhausted' } | { kind: 'not_retryable' };

/** The backoff before retry number `retriesDone + 1`, before jitter; undefined past a schedule's end. */
export function backoffMs(policy: RetryPolicy, retriesDone: number): number | undefined {
  const { backoff } = policy;
  if (backoff.kind === 'schedule') return backoff.delaysMs[retriesDone];
  const factor = backoff.factor ?? 2;
  // Capped before it overflows: 2^1100 is Infinity, and Infinity * 0 (a jitter draw of 0) is NaN.
  return Math.min(backoff.maxMs, backoff.baseMs * factor ** Math.min(retriesDone, 64));
}

/** The delay itself: the backoff, or with jitter a uniform draw in [0, backoff] (full) or [backoff / 2, backoff] (equal). */
export function retryDelayMs(
  policy: RetryPolicy,
  retriesDone: number,
  random: () => number = Math.random,
): number | undefined {
  const delay = backoffMs(policy, retriesDone);
  if (delay === undefined) return undefined;
  if (policy.jitter === 'full') return Math.round(random() * delay);
  if (policy.jitter === 'equal') return Math.round(delay / 2 + (random() * delay) / 2);
  return delay;
}

const isRetryable = (policy: RetryPolicy, failure: Failure) => {
  if (failure.retryable !== undefined) return failure.retryable;
  if (policy.retryable === 'all') return true;
  if (policy.retryable === 'transient') return isTransientFailure(failure.error);
  return policy.retryable(failure.error);
};

/**
 * The next attempt after one that failed. `retriesDone` retries were spent before this attempt (so it
 * was attempt `retriesDone + 1`); `firstFailureAt` is when the item first failed, for `giveUpAfterMs`.
 */
export function nextAttempt(
  policy: RetryPolicy,
  failure: Failure & { retriesDone: number; firstFailureAt?: Date | null },
  now: Date,
  random: () => number = Math.random,
): RetryDecision {
  if (!isRetryable(policy, failure)) return { kind: 'not_retryable' };
  if (failure.retriesDone + 1 >= policy.maxAttempts) return { kind: 'exhausted' };
  const firstFailure = failure.firstFailureAt ?? now;
  if (policy.giveUpAfterMs !== undefined && now.getTime() - firstFailure.getTime() >= policy.giveUpAfterMs)
    return { kind: 'exhausted' };
  const delay = retryDelayMs(policy, failure.retriesDone, random);
  if (delay === undefined) return { kind: 'exhausted' };
  const notBefore = Math.min(failure.notBeforeMs ?? 0, policy.maxNotBeforeMs ?? 0);
  return { kind: 'retry', at: new Date(now.getTime() + Math.max(delay, notBefore)) };
}
