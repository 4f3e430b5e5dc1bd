import type { EventOf } from '@leadline/events';
import {
  ERASED_PREFIX,
  isErased,
  phonesOfSubject,
  rememberingSubjects,
  type Database,
} from '@leadline/runtime';
import { sql, type Transaction } from 'kysely';
import { defineProjection, type ProjectionContext } from '../projection';

/**
 * The read models that keep rows under a lead's phone. (The `documents` table and the bytes are the AI
 * agent's, which forgets them itself; a rebuild here must not touch what it does not rebuild.)
 */
const tablesByPhone = [
  'leads',
  'conversations',
  'messages',
  'consent_records',
  'sequence_enrollments',
] as const;

/**
 * The phones under which the account's rows hold the person `subject`: the erased marker (rows a
 * rebuild wrote after the erasure), and the phone in clear. The event gives it in clear while the key
 * still opens; once destroyed, the event reads as erased too, and the clear phone is found among the
 * account's phones by its keyed hash.
 */
async function phonesOf(
  trx: Transaction<Database>,
  keys: NonNullable<ProjectionContext['personalDataKeys']>,
  accountId: string,
  subject: string,
  phone: string,
): Promise<string[]> {
  const marker = `${ERASED_PREFIX}${subject}`;
  if (!isErased(phone)) return [phone, marker];
  const candidates = await sql<{ phone: string }>`${sql.join(
    tablesByPhone.map(
      (table) =>
        sql`select phone from ${sql.table(table)} where account_id = ${accountId} and phone not like 'erased:%'`,
    ),
    sql` union `,
  )}`.execute(trx);
  const clear = phonesOfSubject(
    rememberingSubjects(keys),
    accountId,
    subject,
    candidates.rows.map((row) => row.phone),
  );
  return [...clear, marker];
}

/**
 * The opt-out outlives the erasure: the law requires honouring a STOP for good (TCPA, CTIA), and
 * allows keeping what that needs (GDPR art. 17(3)(b)). What is kept is the subject (the keyed hash
 * `lead.erased` carries) and the opt-out's time, never the number: a number imported or texting again
 * hashes to the same subject and is opted out until it texts START (see suppression.ts). In a rebuild
 * after the key was destroyed, the conversation under the erased marker carries the opted-out flag of
 * the opt-out's (sealed) event, so the same row is kept. A STOP answered but still undecided at the
 * erasure is not here: its guard stays (the inbound decider keeps it) and its decision, appended after
 * the erasure, records the opt-out afresh.
 */
async function keepOptOut(
  trx: Transaction<Database>,
  event: EventOf<'lead.erased'>,
  conversations: readonly { opted_out: boolean; opted_out_at: Date | null }[],
) {
  const optedOut = conversations.filter((row) => row.opted_out);
  if (optedOut.length === 0) return;
  const times = optedOut.flatMap((row) => (row.opted_out_at ? [row.opted_out_at.getTime()] : []));
  const suppressedAt = times.length > 0 ? new Date(Math.max(...times)) : new Date(event.occurred_at);
  await trx
    .insertInto('opt_out_suppressions')
    .values({ account_id: event.account_id, subject: event.data.subject, suppressed_at: suppressedAt })
    .onConflict((oc) => oc.doNothing())
    .execute();
}

async function erase(trx: Transaction<Database>, event: EventOf<'lead.erased'>, context: ProjectionContext) {
  const keys = context.personalDataKeys;
  if (!keys) throw new Error('The projector needs the personal-data keys to apply lead.erased');
  const accountId = event.account_id;
  const { subject } = event.data;
  const phones = await phonesOf(trx, keys, accountId, subject, event.data.phone);
  const leads = await trx
    .deleteFrom('leads')
    .where('account_id', '=', accountId)
    .where((eb) =>
      eb.or([eb('phone', 'in', phones), ...(event.data.lead_id ? [eb('id', '=', event.data.lead_id)] : [])]),
    )
    .returning('id')
    .execute();
  const leadIds = [
    ...new Set([...leads.map((row) => row.id), ...(event.data.lead_id ? [event.data.lead_id] : [])]),
  ];
  if (leadIds.length > 0) {
    await trx.deleteFrom('lead_checklist_items').where('lead_id', 'in', leadIds).execute();
  }
  // Matched by lead too: an enrollment or a grant follows its lead, whatever phone it was made under.
  for (const table of ['sequence_enrollments', 'consent_records'] as const) {
    await sql`delete from ${sql.table(table)} where account_id = ${accountId}
      and (phone in (${sql.join(phones)}) or lead_id in (${sql.join([...leadIds, ''])}))`.execute(trx);
  }
  const conversations = await trx
    .deleteFrom('conversations')
    .where('account_id', '=', accountId)
    .where('phone', 'in', phones)
    .returning(['opted_out', 'opted_out_at'])
    .execute();
  await keepOptOut(trx, event, conversations);
  await trx.deleteFrom('messages').where('account_id', '=', accountId).where('phone', 'in', phones).execute();
  // The totals follow the rows, as a deletion's do; the usage counters keep their counts (billing).
  if (leads.length > 0 || conversations.length > 0) {
    await trx
      .updateTable('accounts')
      .set({
        total_leads: sql`total_leads - ${leads.length}`,
        total_conversations: sql`total_conversations - ${conversations.length}`,
      })
      .where('id', '=', accountId)
      .execute();
  }
}

/**
 * A person erased (a privacy request): every read-model row of theirs in the account goes, whether it
 * holds the phone in clear (written before the erasure) or the erased marker (a rebuild after it),
 * but an opt-out is kept by the person's keyed hash (`opt_out_suppressions`). Usage counters are left
 * as they are.
 */
export const erasureProjection = defineProjection(
  'erasure',
  ['lead.erased'],
  async (trx, events, context) => {
    for (const event of events) await erase(trx, event, context);
  },
);
