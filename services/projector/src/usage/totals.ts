import type { Database } from '@leadline/runtime';
import { sql, type Transaction } from 'kysely';

/** The running totals the projector keeps on read-model rows (an account's stats, a sequence's count). */
type TotalColumn =
  | { table: 'accounts'; column: 'total_leads' | 'total_conversations' }
  | { table: 'sequences'; column: 'completed_count' };

/** How many each row's total changes by, counted from a run of events: one per id given (or -1 each). */
export function countById(ids: readonly string[], sign: 1 | -1 = 1): Map<string, number> {
  const deltas = new Map<string, number>();
  for (const id of ids) deltas.set(id, (deltas.get(id) ?? 0) + sign);
  return deltas;
}

/**
 * Adds each row's delta to its total in one statement, however many rows a batch touches (a batch of
 * sixteen accounts' imports made sixteen updates). Only the projector of the rows' partition writes
 * them, so no other transaction waits on these rows in another order.
 */
export async function addToTotals(
  trx: Transaction<Database>,
  { table, column }: TotalColumn,
  deltas: ReadonlyMap<string, number>,
) {
  if (deltas.size === 0) return;
  await sql`update ${sql.table(table)} set ${sql.ref(column)} = ${sql.ref(column)} + d.delta
    from unnest(${[...deltas.keys()]}::text[], ${[...deltas.values()]}::int[]) as d (id, delta)
    where ${sql.table(table)}.id = d.id`.execute(trx);
}
