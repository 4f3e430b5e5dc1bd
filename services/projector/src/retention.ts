import type { EventOf } from '@leadline/events';
import type { Database } from '@leadline/runtime';
import type { Transaction } from 'kysely';
import { defineProjection } from './projection';

/**
 * The account's retention passed for everything before `expired_before`: the keys that sealed those
 * days' content are destroyed, and the read models forget their clear copies. What happened stays: a
 * message keeps its time, direction and status, with an empty body and `content_expired`; a checklist
 * item stays collected, with its time, without its value or document. A rebuild after the pass projects
 * the same from the log (those values read as erased there), and then applies this event again.
 */
async function expire(trx: Transaction<Database>, event: EventOf<'account.content_expired'>) {
  const accountId = event.account_id;
  const before = new Date(event.data.expired_before);
  await trx
    .updateTable('messages')
    .set({ body: '', media: '[]', content_expired: true })
    .where('account_id', '=', accountId)
    .where('sent_at', '<', before)
    .where('content_expired', '=', false)
    .execute();
  // The preview is the last message's body: expired with it.
  await trx
    .updateTable('conversations')
    .set({ preview: '' })
    .where('account_id', '=', accountId)
    .where('last_message_at', '<', before)
    .where('preview', 'is not', null)
    .where('preview', '<>', '')
    .execute();
  await trx
    .updateTable('conversations')
    .set({ summary: null, summary_at: null })
    .where('account_id', '=', accountId)
    .where('summary_at', '<', before)
    .execute();
  await trx
    .updateTable('lead_checklist_items')
    .set({ value: null, document_id: null })
    .where('account_id', '=', accountId)
    .where('collected_at', '<', before)
    .where((eb) => eb.or([eb('value', 'is not', null), eb('document_id', 'is not', null)]))
    .execute();
}

/** Applying it twice changes nothing: each statement touches only rows that still hold content. */
export const retentionProjection = defineProjection(
  'retention',
  ['account.content_expired'],
  async (trx, events) => {
    for (const event of events) await expire(trx, event);
  },
);
