import type { RetrySchedule } from '@leadline/domain';
import type { Clock, Database, Settlement, WorkQueue } from '@leadline/runtime';
import type { Kysely } from 'kysely';
import { CallFailed } from './advance';
import { claimDue, queueMeasure, reschedule, type WorkRow } from './queue';
import { redactTaxIds } from './redact';

export interface RegistrationQueueDeps {
  db: Kysely<Database>;
  clock: Clock;
  leaseMs: number;
  retrySchedule: RetrySchedule;
  onError: (error: unknown) => void;
  /** Moves one registration on; false when the read models have not caught up with it yet. */
  advance: (claim: WorkRow) => Promise<boolean>;
}

/**
 * The carrier_registration_work table as the worker runtime's queue: leases, runs, and gives each
 * registration back due again as its settlement says.
 */
export function registrationQueue(deps: RegistrationQueueDeps): WorkQueue<WorkRow, boolean> {
  const { db, clock } = deps;
  return {
    name: 'carrier_registrations',
    claim: ({ limit }) => claimDue(db, clock.now(), deps.leaseMs, limit),
    run: (claim) => deps.advance(claim),
    history: (claim) => ({ retriesDone: claim.failures }),
    async settle(claim, settlement) {
      // Still not projected after a wait: due again as it was, for the next look, no failure counted.
      if (settlement.kind === 'done') {
        if (!settlement.result) await reschedule(db, claim, claim.due_at, clock.now());
        return;
      }
      await settleFailure(deps, claim, settlement);
    },
    async release(claims, until) {
      const now = clock.now();
      for (const claim of claims) await reschedule(db, claim, until ?? now, now);
    },
    leaseEndOf: (claim) => claim.lease_until!,
    measure: () => queueMeasure(db, clock.now()),
  };
}

/**
 * A failed attempt: due again when the retry policy says (or, once it gives up, after the longest
 * backoff), with the failure counted and its message kept for the registration's status. A failed
 * provider call is expected weather and only logged; a failure to record is reported as an error.
 */
async function settleFailure(
  { db, clock, retrySchedule, onError }: RegistrationQueueDeps,
  claim: WorkRow,
  settlement: Exclude<Settlement<boolean>, { kind: 'done' }>,
) {
  const now = clock.now();
  const error = settlement.error;
  const message = redactTaxIds((error as Error).message ?? String(error));
  if (!(error instanceof CallFailed)) onError(error);
  const at = settlement.kind === 'retry' ? settlement.at : new Date(now.getTime() + retrySchedule.maxMs);
  const what = error instanceof CallFailed ? error.action : 'recording';
  console.warn(
    `carrier-registration: ${what} for account ${claim.account_id} failed (${claim.failures + 1} in a row), ` +
      `again at ${at.toISOString()}: ${message}`,
  );
  await reschedule(db, claim, at, now, { failures: claim.failures + 1, message });
}
