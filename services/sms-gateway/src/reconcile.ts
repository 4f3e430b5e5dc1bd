import type { Clock, CommandBus, Database } from '@leadline/runtime';
import type { Kysely } from 'kysely';
import { claimUnreported, settleInterrupted } from './outbox';
import { report } from './pass';
import { reconciliation } from './send-policy';

/**
 * Settles interrupted sends from what the read models learned (status callbacks), then reports what
 * was settled but never reported. Safe with several gateways: each row is settled by one of them.
 */
export function reconciler(deps: {
  db: Kysely<Database>;
  clock: Clock;
  commands: CommandBus;
  graceMs: number;
  timeoutMs: number;
  leaseMs: number;
}) {
  const { db, clock, graceMs, timeoutMs, leaseMs } = deps;
  return async function reconcile(): Promise<number> {
    const now = clock.now();
    const settled = await settleInterrupted(db, now, graceMs, async (trx, row) => {
      const message = await trx
        .selectFrom('messages')
        .select(['sent', 'status', 'provider_message_id'])
        .where('id', '=', row.message_id)
        .executeTakeFirst();
      return reconciliation(row, message, now, timeoutMs);
    });
    // Rare, and its callers want the settled messages readable when it returns.
    await report(
      deps,
      settled.flatMap((row) => (row.report ? [{ row, report: row.report }] : [])),
      true,
    );
    const owed = await claimUnreported(db, now, graceMs, leaseMs);
    await report(
      deps,
      owed.flatMap((row) => (row.report ? [{ row, report: row.report }] : [])),
      true,
    );
    return settled.length;
  };
}
