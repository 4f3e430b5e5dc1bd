import { personalDataScopes, type EventOf } from '@leadline/events';
import { phonesOfSubject, type Database, type PersonalDataKeys } from '@leadline/runtime';
import { sql, type RawBuilder, type Transaction } from 'kysely';

/** Why a delivery about an erased lead was never sent, as the delivery log shows it. */
export const ERASED_DELIVERY_ERROR = 'The lead was erased before this delivery was sent';

/**
 * The deliveries `which` selects lose their payload's `data` but keep their ids, type, status and
 * attempts; those not yet sent are cancelled with `reason`, one being sent loses its claim (its outcome
 * is not recorded, it is never retried), and the receiver's answers, which may echo the payload, go.
 */
async function redactDeliveries(
  trx: Transaction<Database>,
  which: RawBuilder<unknown>,
  reason: string,
  now: Date,
) {
  const { rows: redacted } = await sql<{ id: string }>`
    update webhook_deliveries set
      body = (body::jsonb - 'data')::text,
      status = case when status = 'pending' then 'cancelled' else status end,
      next_attempt_at = null,
      completed_at = coalesce(completed_at, ${now}),
      last_error = case when status = 'pending' then ${reason} else last_error end,
      leased_until = null, claim_token = null
    where ${which}
    returning id`.execute(trx);
  if (redacted.length === 0) return;
  await trx
    .updateTable('webhook_delivery_attempts')
    .set({ response_excerpt: null })
    .where(
      'delivery_id',
      'in',
      redacted.map((row) => row.id),
    )
    .execute();
}

/**
 * Forgets an erased lead in the relay's tables. Every webhook about a lead carries its phone in
 * `data.phone`; those of the erased lead are found by hashing the account's phones.
 * - Deliveries keep their ids, type, status and attempt counts (the partner's delivery log), but their
 *   body loses `data` (the phone, the name and every other value of the lead). A delivery not yet
 *   sent is cancelled: nothing about the lead leaves after its erasure. One being sent right now loses
 *   its claim, so its outcome is not recorded and it is never retried.
 * - The receiver's answers to past attempts may echo the payload: their excerpts go.
 * - The recent events kept for back-fills, and the lead's name, are deleted.
 */
export async function forgetErasedLead(
  trx: Transaction<Database>,
  keys: Pick<PersonalDataKeys, 'subjectOf'>,
  event: EventOf<'lead.erased'>,
  now: Date,
): Promise<void> {
  const accountId = event.account_id;
  const { rows: kept } = await sql<{ phone: string }>`
    select body::jsonb -> 'data' ->> 'phone' as phone from webhook_deliveries where account_id = ${accountId}
    union select body::jsonb -> 'data' ->> 'phone' from webhook_relay_events where account_id = ${accountId}
    union select phone from webhook_lead_names where account_id = ${accountId}`.execute(trx);
  const phones = phonesOfSubject(
    keys,
    accountId,
    event.data.subject,
    kept.flatMap((row) => (row.phone === null ? [] : [row.phone])),
  );
  if (phones.length === 0) return;

  await redactDeliveries(
    trx,
    sql`account_id = ${accountId} and body::jsonb -> 'data' ->> 'phone' = any(${phones}::text[])`,
    ERASED_DELIVERY_ERROR,
    now,
  );
  await sql`
    delete from webhook_relay_events
    where account_id = ${accountId} and body::jsonb -> 'data' ->> 'phone' = any(${phones}::text[])`.execute(
    trx,
  );
  await trx
    .deleteFrom('webhook_lead_names')
    .where('account_id', '=', accountId)
    .where('phone', 'in', phones)
    .execute();
}

/** Why a delivery of expired content was never sent, as the delivery log shows it. */
export const EXPIRED_DELIVERY_ERROR =
  "The account's retention expired this delivery's content before it was sent";

/** The webhook types whose payload carries content the account's retention expires (a message body, a value). */
const typesWithExpiringContent = Object.entries(personalDataScopes)
  .filter(([, scopes]) => scopes?.some((scope) => (scope.expiring?.length ?? 0) > 0))
  .map(([type]) => type);

/**
 * Forgets what the account's retention expired in the relay's tables, as an erasure does for a lead:
 * deliveries of events from before `expired_before` whose payload carries expiring content keep their ids,
 * type, status and attempts, but lose their `data` (a pending one is cancelled), the receiver's
 * answers to them go, and the recent events kept for back-fills from before then are deleted.
 */
export async function forgetExpiredContent(
  trx: Transaction<Database>,
  event: EventOf<'account.content_expired'>,
  now: Date,
): Promise<void> {
  const accountId = event.account_id;
  const before = new Date(event.data.expired_before);
  await redactDeliveries(
    trx,
    sql`account_id = ${accountId} and event_type = any(${typesWithExpiringContent}::text[])
      and (body::jsonb ->> 'created_at')::timestamptz < ${before} and body::jsonb ? 'data'`,
    EXPIRED_DELIVERY_ERROR,
    now,
  );
  await trx
    .deleteFrom('webhook_relay_events')
    .where('account_id', '=', accountId)
    .where('occurred_at', '<', before)
    .where('event_type', 'in', typesWithExpiringContent)
    .execute();
}
