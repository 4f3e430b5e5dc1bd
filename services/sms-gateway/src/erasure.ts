import type { EventOf } from '@leadline/events';
import { phonesOfSubject, type Database, type PersonalDataKeys } from '@leadline/runtime';
import type { Kysely } from 'kysely';

export const ERASED = 'lead.erased' as const;
export const EXPIRED = 'account.content_expired' as const;

/**
 * Forgets an erased lead in the outbox: every row to its phone goes, whatever its state. A pending row
 * is never sent (a pass that claimed it finds it gone when it marks it, and sends nothing); a sent or
 * failed row loses its number and body. A send already handed to the provider cannot be called back:
 * its outcome is simply not recorded. Nothing is appended for the rows dropped: the lead is gone from
 * the read models, and an outcome event would only seal its number again under a new key.
 */
export async function forgetErasedLead(
  db: Kysely<Database>,
  keys: Pick<PersonalDataKeys, 'subjectOf'>,
  event: EventOf<typeof ERASED>,
): Promise<number> {
  const accountId = event.account_id;
  const kept = await db
    .selectFrom('sms_outbox')
    .select('phone')
    .distinct()
    .where('account_id', '=', accountId)
    .execute();
  const phones = phonesOfSubject(
    keys,
    accountId,
    event.data.subject,
    kept.map((row) => row.phone),
  );
  if (phones.length === 0) return 0;
  const deleted = await db
    .deleteFrom('sms_outbox')
    .where('account_id', '=', accountId)
    .where('phone', 'in', phones)
    .executeTakeFirst();
  return Number(deleted.numDeletedRows);
}

/**
 * Forgets the bodies the account's retention expired: rows sent or failed before `expired_before`
 * keep their state and ids (what reconciling and reporting need) with an empty body. A row still
 * waiting to go is left as it is: it is sent as asked (a wait longer than any retention is not
 * expected: manual and compliance messages fail as expired long before).
 */
export async function forgetExpiredBodies(
  db: Kysely<Database>,
  event: EventOf<typeof EXPIRED>,
): Promise<number> {
  const before = new Date(event.data.expired_before);
  const updated = await db
    .updateTable('sms_outbox')
    .set({ body: '' })
    .where('account_id', '=', event.account_id)
    .where('state', 'in', ['sent', 'failed'])
    .where((eb) => eb(eb.fn.coalesce('requested_at', 'created_at'), '<', before))
    .where('body', '<>', '')
    .executeTakeFirst();
  return Number(updated.numUpdatedRows);
}
