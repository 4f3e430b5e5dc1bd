import type { EventOf } from '@leadline/events';
import type { Database } from '@leadline/runtime';
import { sql, type Kysely, type Selectable } from 'kysely';

export type OutboxRow = Selectable<Database['sms_outbox']>;

/**
 * One row per requested message, inserted when the request is consumed. The primary key is the
 * message id, so a request consumed twice (a redelivery, a consumer restarted from an old offset)
 * is one row and is sent at most once.
 */
export async function enqueue(
  db: Kysely<Database>,
  requests: readonly EventOf<'message.outbound_requested'>[],
) {
  if (requests.length === 0) return;
  await db
    .insertInto('sms_outbox')
    .values(
      requests.map((event) => ({
        message_id: event.data.message_id,
        account_id: event.account_id,
        partner_id: event.partner_id,
        phone: event.data.phone,
        body: event.data.body,
        source: event.data.source,
        correlation_id: event.correlation_id,
        causation_id: event.id,
      })),
    )
    .onConflict((oc) => oc.column('message_id').doNothing())
    .execute();
}

/**
 * Leases up to `limit` pending rows, oldest first, for `leaseMs`: another gateway instance skips
 * them (SKIP LOCKED while claiming, the lease after), and a crashed instance's lease runs out.
 */
export async function claimPending(db: Kysely<Database>, now: Date, leaseMs: number, limit: number) {
  const { rows } = await sql<OutboxRow>`
    update sms_outbox set lease_until = ${new Date(now.getTime() + leaseMs)}, updated_at = ${now}
    where message_id in (
      select message_id from sms_outbox
      where state = 'pending' and (lease_until is null or lease_until < ${now})
      order by created_at, message_id
      limit ${limit}
      for update skip locked
    )
    returning *`.execute(db);
  return rows.sort((a, b) => a.created_at.getTime() - b.created_at.getTime());
}

/**
 * Committed before the provider is called: from here on the message may have left, so the row is
 * never sent again, only settled (sent or failed) by what we learn. False when the row was not
 * pending any more (another instance took it after our lease ran out).
 */
export async function markSending(db: Kysely<Database>, messageId: string, now: Date): Promise<boolean> {
  const result = await db
    .updateTable('sms_outbox')
    .set({ state: 'sending', sending_at: now, updated_at: now })
    .where('message_id', '=', messageId)
    .where('state', '=', 'pending')
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

export async function settle(
  db: Kysely<Database>,
  messageId: string,
  state: 'sent' | 'failed',
  now: Date,
  providerMessageId: string | null = null,
) {
  await db
    .updateTable('sms_outbox')
    .set({ state, updated_at: now, ...(providerMessageId && { provider_message_id: providerMessageId }) })
    .where('message_id', '=', messageId)
    .where('state', 'in', ['pending', 'sending'])
    .execute();
}

/** Rows marked sending longer ago than `graceMs`: the send was interrupted or its outcome is unknown. */
export function unsettled(db: Kysely<Database>, now: Date, graceMs: number) {
  return db
    .selectFrom('sms_outbox')
    .selectAll()
    .where('state', '=', 'sending')
    .where('sending_at', '<', new Date(now.getTime() - graceMs))
    .orderBy('sending_at')
    .limit(100)
    .execute();
}
