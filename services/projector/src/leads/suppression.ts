import type { EventOf } from '@leadline/events';
import { subjectOfPhone, type Database } from '@leadline/runtime';
import { sql, type Transaction } from 'kysely';
import { defineProjection } from '../projection';

/**
 * The events that make a conversation row for their number (or a lead, whose number the partner sees
 * as opted out or not): each of them, for a number whose opt-out outlived its person's erasure, leaves
 * the conversation opted out. `lead.opted_in` (START) ends the suppression.
 */
const handled = [
  'lead.created',
  'message.received',
  'message.outbound_requested',
  'conversation.started',
  'conversation.ai_paused',
  'conversation.ai_resumed',
  'conversation.handoff_requested',
  'conversation.handoff_cleared',
  'lead.opted_in',
] as const;
type SuppressionEvent = EventOf<(typeof handled)[number]>;

/**
 * The opt-outs kept past an erasure (`opt_out_suppressions`, written by erasure.ts) seen on the
 * numbers they hold back. A number re-imported or texting again after its erasure hashes to the same
 * subject: its conversation is opted out (made for it when it has none, as `lead.opted_out` makes
 * one), so GET lead and conversation show what every decision already refuses (the decision states
 * read the suppressions too, before the projector has seen the lead). A START deletes the suppression
 * as it clears the conversation's flag (the messaging projection, applied before this one).
 *
 * The suppressions are deleted before the numbers are marked: within one call nothing suppresses a
 * number (only `lead.erased` does, a projection of its own), so what a START lifted anywhere in the
 * run stays lifted, and whatever came before or after it leaves the row as the messaging projection
 * did. Marking twice changes nothing.
 */
export const suppressionProjection = defineProjection(
  'suppressions',
  handled,
  async (trx, events, context) => {
    // Suppressions come only from erasures, which need the keys: without them there are none to honour.
    if (!context.personalDataKeys) return;
    // Most accounts have none: one look, and no number is hashed (a replayed bulk import's thousand
    // creates would cost a keyed hash each).
    const accounts = await accountsWithSuppressions(
      trx,
      [...new Set(events.map((event) => event.account_id))],
      context.suppressedAccounts ?? new Map(),
    );
    if (accounts.size === 0) return;
    const keys = context.personalDataKeys;
    const concerned = events.filter((event) => accounts.has(event.account_id));
    const subjectOf = (event: SuppressionEvent) => subjectOfPhone(keys, event.account_id, event.data.phone);
    const lifted = concerned.filter((event) => event.type === 'lead.opted_in');
    if (lifted.length > 0)
      await liftSuppressions(
        trx,
        lifted.map((event) => [event.account_id, subjectOf(event)]),
      );
    const numbers = new Map<string, [string, string, string]>();
    for (const event of concerned) {
      if (event.type === 'lead.opted_in') continue;
      const subject = subjectOf(event);
      numbers.set(`${event.account_id}\u0000${subject}\u0000${event.data.phone}`, [
        event.account_id,
        event.data.phone,
        subject,
      ]);
    }
    if (numbers.size > 0) await markSuppressed(trx, [...numbers.values()]);
  },
);

/** Of `accountIds`, those that keep any suppression; `known` remembers the answers for the batch. */
async function accountsWithSuppressions(
  trx: Transaction<Database>,
  accountIds: readonly string[],
  known: Map<string, boolean>,
) {
  const unknown = accountIds.filter((id) => !known.has(id));
  if (unknown.length > 0) {
    const { rows } = await sql<{ account_id: string }>`
      select a.account_id from unnest(${unknown}::text[]) as a (account_id)
      where exists (select 1 from opt_out_suppressions s where s.account_id = a.account_id)`.execute(trx);
    const keeping = new Set(rows.map((row) => row.account_id));
    for (const id of unknown) known.set(id, keeping.has(id));
  }
  return new Set(accountIds.filter((id) => known.get(id)));
}

async function liftSuppressions(trx: Transaction<Database>, subjects: readonly [string, string][]) {
  await sql`delete from opt_out_suppressions s
    using unnest(${subjects.map(([account]) => account)}::text[], ${subjects.map(([, subject]) => subject)}::text[])
      as v (account_id, subject)
    where s.account_id = v.account_id and s.subject = v.subject`.execute(trx);
}

/** One statement for the call's numbers, whatever their count: a bulk import's thousand leads included. */
async function markSuppressed(trx: Transaction<Database>, numbers: readonly [string, string, string][]) {
  await sql`insert into conversations (account_id, phone, opted_out, opted_out_at)
    select v.account_id, v.phone, true, s.suppressed_at
    from unnest(
      ${numbers.map(([account]) => account)}::text[],
      ${numbers.map(([, phone]) => phone)}::text[],
      ${numbers.map(([, , subject]) => subject)}::text[]
    ) as v (account_id, phone, subject)
    join opt_out_suppressions s on s.account_id = v.account_id and s.subject = v.subject
    on conflict (account_id, phone) do update
      set opted_out = true, opted_out_at = excluded.opted_out_at
      where not conversations.opted_out`.execute(trx);
}
