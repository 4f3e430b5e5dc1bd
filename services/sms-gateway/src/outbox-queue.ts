import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Clock, Database, WorkQueue } from '@leadline/runtime';
import { claimPending, nextPendingAt, releaseClaim } from './outbox';
import type { AccountClaim } from './send-policy';

/** The outbox as the worker's queue: each item is one account's claimed rows, run by `pass`. */
export function outboxQueue(deps: {
  db: Kysely<Database>;
  clock: Clock;
  leaseMs: number;
  decisionBatch: number;
  pass: WorkQueue<AccountClaim>['run'];
  onError: (error: unknown) => void;
}): WorkQueue<AccountClaim> {
  const { db, clock, leaseMs, decisionBatch, onError } = deps;
  /** Passes in a row that could not decide, per account: the backoff grows with them (this process's view). */
  const failedPasses = new Map<string, number>();

  return {
    name: 'sms_outbox',
    /**
     * Leases the oldest free accounts' rows, `decisionBatch` at most of each and one account per free
     * worker; a claim never takes an account another claim holds (see claimPending).
     */
    async claim({ limit }) {
      const token = randomUUID();
      const now = clock.now();
      const rows = await claimPending(db, now, leaseMs, limit * decisionBatch, decisionBatch, {
        accounts: limit,
        token,
      });
      return [...Map.groupBy(rows, (row) => row.account_id)].map(([accountId, accountRows]) => ({
        accountId,
        rows: accountRows,
        token,
        leaseUntil: new Date(now.getTime() + leaseMs),
      }));
    },
    run: deps.pass,
    history: (claim) => ({ retriesDone: failedPasses.get(claim.accountId) ?? 0 }),
    async settle(claim, settlement) {
      if (settlement.kind === 'done') {
        failedPasses.delete(claim.accountId);
        return;
      }
      onError(settlement.error);
      failedPasses.set(claim.accountId, (failedPasses.get(claim.accountId) ?? 0) + 1);
      await releaseClaim(
        db,
        claim.rows.map((row) => row.message_id),
        claim.token,
        settlement.kind === 'retry' ? settlement.at : undefined,
      );
    },
    async release(claims, until) {
      for (const claim of claims)
        await releaseClaim(
          db,
          claim.rows.map((row) => row.message_id),
          claim.token,
          until,
        );
    },
    leaseEndOf: (claim) => claim.leaseUntil,
    // A paced number's next slot and a held row's time are leases and holds ending: the idle loop
    // sleeps until the first of them instead of polling.
    nextDue: () => nextPendingAt(db, clock.now()),
    async measure() {
      const { rows } = await sql<{ depth: string; lateness: number | null }>`
        select count(*)::text as depth,
               extract(epoch from ${clock.now()}::timestamptz - min(created_at))::float8 as lateness
        from sms_outbox where state = 'pending'`.execute(db);
      return { depth: Number(rows[0]?.depth ?? 0), latenessSeconds: rows[0]?.lateness ?? 0 };
    },
  };
}
