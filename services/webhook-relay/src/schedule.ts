import { nextAttempt, type RetryPolicy } from '@leadline/runtime';

/** Spec §6: retries 30 s, 2 min, 10 min, 1 h and 4 h after the previous attempt. */
export const DEFAULT_RETRY_DELAYS_SECONDS = [30, 120, 600, 3600, 14_400] as const;

/** A `Retry-After` longer than this is not honoured beyond it, so one answer cannot park a delivery. */
export const MAX_RETRY_AFTER_SECONDS = 24 * 3600;

/**
 * The relay's retry policy: the specification's schedule exactly (no jitter: a partner may rely on the
 * published times), every failed answer retried until the schedule ends, a receiver's longer
 * `Retry-After` honoured up to a day. A 410 is final (see delivery-policy.ts).
 */
export const deliveryRetryPolicy = (delaysSeconds: readonly number[]): RetryPolicy => ({
  backoff: { kind: 'schedule', delaysMs: delaysSeconds.map((seconds) => seconds * 1000) },
  jitter: 'none',
  maxAttempts: Number.POSITIVE_INFINITY,
  retryable: 'all',
  maxNotBeforeMs: MAX_RETRY_AFTER_SECONDS * 1000,
});

export type AttemptOutcome =
  | { kind: 'succeeded' }
  /** 410 Gone: the receiver asks for no more deliveries; the webhook is disabled. */
  | { kind: 'gone' }
  | { kind: 'failed'; retryAfterSeconds: number | null };

export type NextStep =
  { kind: 'succeeded' } | { kind: 'gone' } | { kind: 'retry'; at: Date } | { kind: 'exhausted' };

/**
 * What follows an attempt. `retriesDone` retries have already been spent; the next one waits the
 * schedule's delay after the attempt, or the receiver's `Retry-After` when that is longer.
 */
export function nextStep(
  outcome: AttemptOutcome,
  retriesDone: number,
  delaysSeconds: readonly number[],
  attemptedAt: Date,
): NextStep {
  if (outcome.kind !== 'failed') return outcome;
  const decision = nextAttempt(
    deliveryRetryPolicy(delaysSeconds),
    { error: null, retriesDone, notBeforeMs: (outcome.retryAfterSeconds ?? 0) * 1000 },
    attemptedAt,
  );
  return decision.kind === 'retry' ? decision : { kind: 'exhausted' };
}

/** `Retry-After` as seconds from `now`: delta-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(header: string | undefined, now: Date): number | null {
  if (!header) return null;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return null;
  return Math.max(0, Math.ceil((date - now.getTime()) / 1000));
}
