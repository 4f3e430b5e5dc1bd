import {
  advanceCheckpoint,
  freshRecords,
  PROGRESS_CHANNEL,
  type Database,
  type PartitionProgress,
  type PositionedEvent,
} from '@leadline/runtime';
import { sql, type Kysely } from 'kysely';
import type { Projection } from './projection';

/**
 * Every live batch takes this lock in shared mode; `rebuild` takes it exclusively for the instant it
 * swaps the schemas, so no batch straddles the swap.
 */
export const APPLY_LOCK = sql`hashtextextended('leadline.projector.apply', 0)`;

/**
 * Applies one partition's batch in one transaction, together with the partition's checkpoint; the
 * live projector (not a rebuild into a side schema) also notifies waiting commands on commit. Records
 * below the checkpoint were applied by an earlier delivery and are skipped, so a redelivered batch
 * changes nothing.
 */
export async function applyBatch(
  db: Kysely<Database>,
  projections: readonly Projection[],
  topic: string,
  partition: number,
  records: readonly PositionedEvent[],
  options: { live: boolean } = { live: true },
): Promise<number> {
  const last = records.at(-1);
  if (!last) return 0;
  return db.transaction().execute(async (trx) => {
    if (options.live) await sql`select pg_advisory_xact_lock_shared(${APPLY_LOCK})`.execute(trx);
    const fresh = await freshRecords(trx, 'projection_checkpoints', topic, partition, records, new Date());
    if (fresh.length === 0) return 0;

    const events = fresh.flatMap((record) => (record.event ? [record.event] : []));
    for (const projection of projections) {
      const handled = events.filter((event) => projection.handles.has(event.type));
      if (handled.length > 0) await projection.apply(trx, handled);
    }

    const nextOffset = await advanceCheckpoint(
      trx,
      'projection_checkpoints',
      topic,
      partition,
      last.offset,
      new Date(),
    );
    if (options.live) {
      const progress: PartitionProgress[] = [{ topic, partition, next_offset: nextOffset }];
      // Delivered only if and when the transaction commits.
      await sql`select pg_notify(${PROGRESS_CHANNEL}, ${JSON.stringify(progress)})`.execute(trx);
    }
    return fresh.length;
  });
}
