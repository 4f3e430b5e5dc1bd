import type { EventOf } from '@leadline/events';
import { ERASED_PREFIX, isErased, type Database } from '@leadline/runtime';
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
 * The phones under which the account's rows hold each person erased: the erased marker (rows a rebuild
 * wrote after the erasure), and the phone in clear. An event gives it in clear while the key still
 * opens; once destroyed, the event reads as erased too, and the clear phone is found among the
 * account's phones by its keyed hash (the account's phones read once for all the events that need it).
 */
async function phonesOfErased(
  trx: Transaction<Database>,
  keys: NonNullable<ProjectionContext['personalDataKeys']>,
  accountId: string,
  events: readonly EventOf<'lead.erased'>[],
): Promise<Map<string, string[]>> {
  const phones = new Map<string, string[]>();
  const hidden = new Set<string>();
  for (const { data } of events) {
    const known = phones.get(data.subject) ?? [`${ERASED_PREFIX}${data.subject}`];
    if (isErased(data.phone)) hidden.add(data.subject);
    else if (!known.includes(data.phone)) known.push(data.phone);
    phones.set(data.subject, known);
  }
  if (hidden.size === 0) return phones;
  const candidates = await sql<{ phone: string }>`${sql.join(
    tablesByPhone.map(
      (table) =>
        sql`select phone from ${sql.table(table)} where account_id = ${accountId} and phone not like 'erased:%'`,
    ),
    sql` union `,
  )}`.execute(trx);
  for (const { phone } of candidates.rows) {
    const subject = keys.subjectOf(accountId, 'lead', phone);
    const known = hidden.has(subject) ? phones.get(subject)! : undefined;
    if (known && !known.includes(phone)) known.push(phone);
  }
  return phones;
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
async function keepOptOuts(
  trx: Transaction<Database>,
  accountId: string,
  erasedAt: ReadonlyMap<string, string>,
  conversations: readonly { subject: string; opted_out: boolean; opted_out_at: Date | null }[],
) {
  // Each person's latest opt-out time, or their erasure's when none of their conversations has one.
  const latest = new Map<string, number | undefined>();
  for (const row of conversations) {
    if (!row.opted_out) continue;
    const at = row.opted_out_at?.getTime();
    const before = latest.get(row.subject);
    latest.set(row.subject, at === undefined ? before : Math.max(before ?? at, at));
  }
  if (latest.size === 0) return;
  await trx
    .insertInto('opt_out_suppressions')
    .values(
      [...latest].map(([subject, at]) => ({
        account_id: accountId,
        subject,
        suppressed_at: new Date(at ?? erasedAt.get(subject)!),
      })),
    )
    .onConflict((oc) => oc.doNothing())
    .execute();
}

/** The people of one account erased in a run of `lead.erased`, forgotten together. */
async function erase(
  trx: Transaction<Database>,
  accountId: string,
  events: readonly EventOf<'lead.erased'>[],
  keys: NonNullable<ProjectionContext['personalDataKeys']>,
) {
  const phonesBySubject = await phonesOfErased(trx, keys, accountId, events);
  const subjectOfPhone = new Map(
    [...phonesBySubject].flatMap(([subject, phones]) => phones.map((phone) => [phone, subject] as const)),
  );
  const phones = [...subjectOfPhone.keys()];
  const namedLeads = events.flatMap((event) => (event.data.lead_id ? [event.data.lead_id] : []));
  const leads = await trx
    .deleteFrom('leads')
    .where('account_id', '=', accountId)
    .where((eb) =>
      eb.or([eb('phone', 'in', phones), ...(namedLeads.length > 0 ? [eb('id', 'in', namedLeads)] : [])]),
    )
    .returning('id')
    .execute();
  const leadIds = [...new Set([...leads.map((row) => row.id), ...namedLeads])];
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
    .returning(['phone', 'opted_out', 'opted_out_at'])
    .execute();
  // When each person was erased: an opt-out without its time is kept from then.
  const erasedAt = new Map(events.map((event) => [event.data.subject, event.occurred_at]));
  await keepOptOuts(
    trx,
    accountId,
    erasedAt,
    conversations.map((row) => ({ ...row, subject: subjectOfPhone.get(row.phone)! })),
  );
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
    const keys = context.personalDataKeys;
    if (!keys) throw new Error('The projector needs the personal-data keys to apply lead.erased');
    // A run holds only erasures (in log order, nothing between them), so an account's are one: a
    // statement per table for all its people, not per person.
    for (const [accountId, erased] of Map.groupBy(events, (event) => event.account_id)) {
      await erase(trx, accountId, erased, keys);
      // Its opt-outs may now be kept as suppressions, which the batch's later runs must see.
      context.suppressedAccounts?.delete(accountId);
    }
  },
);
