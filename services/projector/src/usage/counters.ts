import type { Database } from '@leadline/runtime';
import { sql, type Transaction } from 'kysely';
import { periodOf } from './period';

export type UsageCounter =
  | 'conversations'
  | 'messages_sent'
  | 'messages_received'
  | 'leads_imported'
  | 'documents_collected'
  | 'sequences_completed';

interface Countable {
  account_id: string;
  partner_id: string;
  occurred_at: string;
}

/**
 * Adds one to `counter` for each event, in the billing period (UTC month) the event occurred in,
 * with one statement for the whole batch. Runs in the batch's transaction, so counters are exact
 * after a replay: the checkpoint guard applies each record once.
 */
export async function addUsage(
  trx: Transaction<Database>,
  counter: UsageCounter,
  events: readonly Countable[],
) {
  const increments = new Map<
    string,
    { account_id: string; partner_id: string; period: string; by: number }
  >();
  for (const event of events) {
    const period = periodOf(event.occurred_at);
    const key = `${event.account_id}/${period}`;
    const entry = increments.get(key) ?? {
      account_id: event.account_id,
      partner_id: event.partner_id,
      period,
      by: 0,
    };
    entry.by++;
    increments.set(key, entry);
  }
  if (increments.size === 0) return;
  await trx
    .insertInto('usage_counters')
    .values([...increments.values()].map(({ by, ...row }) => ({ ...row, [counter]: by })))
    .onConflict((oc) =>
      oc.columns(['account_id', 'period']).doUpdateSet({
        [counter]: sql`usage_counters.${sql.ref(counter)} + excluded.${sql.ref(counter)}`,
      }),
    )
    .execute();
}
