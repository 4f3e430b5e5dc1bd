import type { Clock, Database, RetryPolicy, WorkQueue } from '@leadline/runtime';
import type { Kysely } from 'kysely';
import { claimDueSteps, releaseLeases, type DueStep } from './claims';

/** One account's claimed steps: decided together, in one command (one lock, one append). */
export interface AccountSteps {
  accountId: string;
  partnerId: string;
  steps: DueStep[];
  leaseUntil: Date;
}

/**
 * A claim that could not be decided (the log or the read models were unavailable) is tried again
 * after a backoff with jitter, so sequencers that failed together do not all come back at once.
 */
export const dueStepsRetry: RetryPolicy = {
  backoff: { kind: 'exponential', baseMs: 1_000, maxMs: 30_000 },
  jitter: 'full',
  maxAttempts: Number.POSITIVE_INFINITY,
  retryable: 'all',
};

/**
 * The due steps as the worker's queue: an item is one account's claimed steps. The worker runs one item
 * of an account at a time (its fairness key), and a claim leaves the accounts it holds to it, so an
 * account's next steps wait for the decision under way, whose events they must see, while other
 * accounts' steps are decided meanwhile.
 */
export function dueStepsQueue(deps: {
  db: Kysely<Database>;
  clock: Clock;
  leaseMs: number;
  /** The most due steps of one account claimed at once. */
  batchSize: number;
  run: WorkQueue<AccountSteps>['run'];
  onError: (error: unknown) => void;
}): WorkQueue<AccountSteps> {
  const { db, clock, leaseMs, batchSize, onError } = deps;
  /** Claims in a row that could not be decided, per account (this process's view): the backoff grows. */
  const failedClaims = new Map<string, number>();
  return {
    name: 'sequence_steps',
    async claim({ limit, held }) {
      const now = clock.now();
      const steps = await claimDueSteps(db, now, leaseMs, batchSize, {
        accounts: limit,
        skipAccounts: [...held.keys()],
      });
      return [...Map.groupBy(steps, (step) => step.account_id)].map(([accountId, accountSteps]) => ({
        accountId,
        partnerId: accountSteps[0]!.partner_id,
        steps: accountSteps,
        leaseUntil: new Date(now.getTime() + leaseMs),
      }));
    },
    run: deps.run,
    history: (item) => ({ retriesDone: failedClaims.get(item.accountId) ?? 0 }),
    // A step done keeps its lease until it runs out: the read models may not show it done yet, and the
    // lease keeps it from being claimed again meanwhile (a stale claim would decide nothing anyway).
    async settle(item, settlement) {
      if (settlement.kind === 'done') {
        failedClaims.delete(item.accountId);
        return;
      }
      onError(settlement.error);
      failedClaims.set(item.accountId, (failedClaims.get(item.accountId) ?? 0) + 1);
      await releaseLeases(db, item.steps, settlement.kind === 'retry' ? settlement.at : undefined);
    },
    async release(items, until) {
      await releaseLeases(
        db,
        items.flatMap((item) => item.steps),
        until,
      );
    },
    leaseEndOf: (item) => item.leaseUntil,
  };
}
