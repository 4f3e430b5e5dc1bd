import type { EventOf } from '@leadline/events';
import { phonesOfSubject, type Database, type DocumentStore, type PersonalDataKeys } from '@leadline/runtime';
import type { Kysely } from 'kysely';

/**
 * Forgets an erased lead in what the agent keeps: its pending messages (their bodies and media links)
 * and its pending turns (an answer not yet written, a sequence step not yet worded) go, so the model
 * is never asked about the lead again (a turn already claimed finds its rows gone when it finishes);
 * and the documents it sent (their rows, their extracted text, their bytes in the document store).
 */
export async function forgetErasedLead(
  db: Kysely<Database>,
  deps: { personalDataKeys: Pick<PersonalDataKeys, 'subjectOf'>; documents: DocumentStore },
  event: EventOf<'lead.erased'>,
): Promise<void> {
  const accountId = event.account_id;
  const kept = await db
    .selectFrom('ai_pending_turns')
    .select('phone')
    .where('account_id', '=', accountId)
    .union(db.selectFrom('ai_pending_messages').select('phone').where('account_id', '=', accountId))
    .union(db.selectFrom('documents').select('phone').where('account_id', '=', accountId))
    .execute();
  const phones = phonesOfSubject(
    deps.personalDataKeys,
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
  const documents = await db
    .selectFrom('documents')
    .select('id')
    .where('account_id', '=', accountId)
    .where('phone', 'in', phones)
    .execute();
  if (documents.length === 0) return;
  const ids = documents.map((document) => document.id);
  // The bytes first, then the rows: a failure between the two leaves rows the retry finds again,
  // never bytes no row names. (The rows are only read until then: the Postgres store clears the bytes
  // on its own connection, which a lock taken here would block.)
  await deps.documents.remove(ids);
  await db.deleteFrom('documents').where('id', 'in', ids).execute();
}

/**
 * Forgets what the account's retention expired (everything before `expired_before`): the documents
 * that came before it (their bytes, already unreadable once their day's key is destroyed, and their
 * rows, which name the lead and the message), and messages still waiting for a turn since then
 * (with the bursts they leave empty).
 */
export async function forgetExpiredContent(
  db: Kysely<Database>,
  deps: { documents: DocumentStore },
  event: EventOf<'account.content_expired'>,
): Promise<void> {
  const accountId = event.account_id;
  const before = new Date(event.data.expired_before);
  await db
    .deleteFrom('ai_pending_messages')
    .where('account_id', '=', accountId)
    .where('received_at', '<', before)
    .execute();
  // A burst left without messages has nothing to answer (intake writes a turn with its message).
  await db
    .deleteFrom('ai_pending_turns')
    .where('account_id', '=', accountId)
    .where('kind', '=', 'inbound')
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('ai_pending_messages')
            .select('message_id')
            .whereRef('ai_pending_messages.turn_id', '=', 'ai_pending_turns.id'),
        ),
      ),
    )
    .execute();
  const documents = await db
    .selectFrom('documents')
    .select('id')
    .where('account_id', '=', accountId)
    .where('created_at', '<', before)
    .execute();
  if (documents.length === 0) return;
  const ids = documents.map((document) => document.id);
  // As for an erasure: the bytes first, then the rows.
  await deps.documents.remove(ids);
  await db.deleteFrom('documents').where('id', 'in', ids).execute();
}
