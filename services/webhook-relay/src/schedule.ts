/** Spec §6: retries 30 s, 2 min, 10 min, 1 h and 4 h after the previous attempt. */
export const DEFAULT_RETRY_DELAYS_SECONDS = [30, 120, 600, 3600, 14_400] as const;

/** A `Retry-After` longer than this is not honoured beyond it, so one answer cannot park a delivery. */
export const MAX_RETRY_AFTER_SECONDS = 24 * 3600;

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
  const delay = delaysSeconds[retriesDone];
  if (delay === undefined) return { kind: 'exhausted' };
  const retryAfter = Math.min(outcome.retryAfterSeconds ?? 0, MAX_RETRY_AFTER_SECONDS);
  return { kind: 'retry', at: new Date(attemptedAt.getTime() + Math.max(delay, retryAfter) * 1000) };
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
