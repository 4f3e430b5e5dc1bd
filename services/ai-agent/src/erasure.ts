import type { EventOf } from '@leadline/events';
import { phonesOfSubject, type Database, type PersonalDataKeys } from '@leadline/runtime';
import type { Kysely } from 'kysely';

/**
 * Forgets an erased lead in the agent's queue: its pending messages (their bodies and media links) and
 * its pending turns (an answer not yet written, a sequence step not yet worded) go, so the model is never
 * asked about the lead again. A turn already claimed finds its rows gone when it finishes.
 */
export async function forgetErasedLead(
  db: Kysely<Database>,
  keys: Pick<PersonalDataKeys, 'subjectOf'>,
  event: EventOf<'lead.erased'>,
): Promise<void> {
  const accountId = event.account_id;
  const kept = await db
    .selectFrom('ai_pending_turns')
    .select('phone')
    .where('account_id', '=', accountId)
    .union(db.selectFrom('ai_pending_messages').select('phone').where('account_id', '=', accountId))
    .execute();
  const phones = phonesOfSubject(
    keys,
    accountId,
    event.data.subject,
    kept.map((row) => row.phone),
  );
  if (phones.length === 0) return;
  await db
    .deleteFrom('ai_pending_messages')
    .where('account_id', '=', accountId)
    .where('phone', 'in', phones)
    .execute();
  await db
    .deleteFrom('ai_pending_turns')
    .where('account_id', '=', accountId)
    .where('phone', 'in', phones)
    .execute();
}
