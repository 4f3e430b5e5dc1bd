import { advanceCheckpoint, freshRecords, type Database, type PositionedEvent } from '@leadline/runtime';
import type { DomainEvent } from '@leadline/events';
import { sql, type Kysely } from 'kysely';
import type { Projection, ProjectionContext } from './projection';

/**
 * Every live batch takes this lock in shared mode; `rebuild` takes it exclusively for the instant it
 * swaps the schemas, so no batch straddles the swap.
 */
export const APPLY_LOCK = sql`hashtextextended('leadline.projector.apply', 0)`;

/**
 * A batch cut into maximal runs of consecutive events that the same projections handle, in log order.
 * Applying the runs one after the other keeps log order across projections (a checklist item collected
 * and then the lead deleted leaves nothing, whatever the batch boundaries), while a bulk import, one
 * long run, is still one multi-row statement per projection.
 */
export function segmentsInLogOrder(
  projections: readonly Projection[],
  events: readonly DomainEvent[],
): { projections: Projection[]; events: DomainEvent[] }[] {
  const segments: { projections: Projection[]; events: DomainEvent[] }[] = [];
  for (const event of events) {
    const handling = projections.filter((projection) => projection.handles.has(event.type));
    if (handling.length === 0) continue;
    const last = segments.at(-1);
    const same =
      last &&
      last.projections.length === handling.length &&
      last.projections.every((projection, index) => projection === handling[index]);
    if (same) last.events.push(event);
    else segments.push({ projections: handling, events: [event] });
  }
  return segments;
}

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
  options: { live: boolean; context?: ProjectionContext } = { live: true },
): Promise<number> {
  const context: ProjectionContext = { ...options.context, suppressedAccounts: new Map() };
  const last = records.at(-1);
  if (!last) return 0;
  return db.transaction().execute(async (trx) => {
    if (options.live) await sql`select pg_advisory_xact_lock_shared(${APPLY_LOCK})`.execute(trx);
    const fresh = await freshRecords(trx, 'projection_checkpoints', topic, partition, records, new Date());
    if (fresh.length === 0) return 0;

    const events = fresh.flatMap((record) => (record.event ? [record.event] : []));
    for (const segment of segmentsInLogOrder(projections, events)) {
      for (const projection of segment.projections) await projection.apply(trx, segment.events, context);
    }

    await advanceCheckpoint(trx, 'projection_checkpoints', topic, partition, last.offset, new Date(), {
      notifyProgress: options.live,
    });
    return fresh.length;
  });
}
