import type { RetrySchedule } from '@leadline/domain';
import { createWorker, reportFailure, type RetryPolicy } from '@leadline/runtime';
import { advanceRegistration, type AdvanceDeps } from './advance';
import { registrationQueue } from './registration-queue';

export interface RegistrationWorkerDeps extends AdvanceDeps {
  /** Randomness of the retry backoff, in [0, 1). */
  random?: () => number;
  retrySchedule: RetrySchedule;
  pollIntervalMs?: number;
  concurrency?: number;
  onError?: (error: unknown) => void;
}

export interface RunningRegistrationWorker {
  /**
   * Works on the registrations due now; returns how many it moved on (tests call it rather than wait).
   * Those the read models have not caught up with yet stay due, for the next poll.
   */
  work(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * The carriers' registration, one account at a time, on the shared worker runtime: a due registration
 * is leased, its next action decided from the read model, carried out at the provider with nothing
 * open in the database and no lock held, and its outcome recorded as events under the account's lock,
 * with when to come back: at once, or when the step under review is next looked at (a Trust Hub
 * callback brings that forward). A failed call (or a failure to record) is retried by the worker's
 * policy with backoff; a refusal fails the step with the provider's reason.
 */
export function startRegistrationWorker(deps: RegistrationWorkerDeps): RunningRegistrationWorker {
  const onError = deps.onError ?? reportFailure('carrier-registration');
  const queue = registrationQueue({
    db: deps.db,
    clock: deps.clock,
    // Past the call's bound, with room to record: a lease never runs out under a live worker.
    leaseMs: deps.callTimeoutMs * 2 + 30_000,
    retrySchedule: deps.retrySchedule,
    onError,
    advance: (claim) => advanceRegistration(deps, claim),
  });
  const worker = createWorker({
    queue,
    clock: deps.clock,
    concurrency: deps.concurrency ?? 2,
    retry: registrationRetry(deps.retrySchedule),
    // The call's own bound and the recording after it, well inside the lease.
    budgetMs: deps.callTimeoutMs + 30_000,
    pollMs: deps.pollIntervalMs ?? 1000,
    random: deps.random,
    onError,
  });
  worker.start();

  return {
    work: () => worker.drain(),
    stop: () => worker.stop(),
  };
}

/**
 * Calls that failed for a passing reason, and failures to record an outcome, are tried again with the
 * delay doubling from `baseMs` to `maxMs`; half of it is spread at random (equal jitter), so the
 * registrations an outage interrupted do not all come back at once, yet the provider gets its time.
 */
export const registrationRetry = (schedule: RetrySchedule): RetryPolicy => ({
  backoff: { kind: 'exponential', baseMs: schedule.baseMs, maxMs: schedule.maxMs },
  jitter: 'equal',
  maxAttempts: Number.POSITIVE_INFINITY,
  retryable: 'all',
});
