import type { Kysely, Transaction } from 'kysely';
import type { Database } from './db/schema';

/**
 * Whether nothing but compliance replies may go to `phone` from this account: the projected opt-out
 * (`conversations.opted_out`), or an opt-out answered to Twilio whose decision is still queued (a
 * guard row the inbound route writes before answering). Every send path asks here right before it
 * sends, so a STOP takes effect the moment it is acknowledged, whatever the projector's lag.
 */
export async function isOptedOut(
  db: Kysely<Database> | Transaction<Database>,
  accountId: string,
  phone: string,
): Promise<boolean> {
  const guard = await db
    .selectFrom('opt_out_guards')
    .select('message_sid')
    .where('account_id', '=', accountId)
    .where('phone', '=', phone)
    .executeTakeFirst();
  if (guard) return true;
  const conversation = await db
    .selectFrom('conversations')
    .select('opted_out')
    .where('account_id', '=', accountId)
    .where('phone', '=', phone)
    .executeTakeFirst();
  return conversation?.opted_out ?? false;
}

/** Of `phones`, those `isOptedOut` would answer true for, in two queries whatever their number. */
export async function optedOutPhones(
  db: Kysely<Database> | Transaction<Database>,
  accountId: string,
  phones: string[],
): Promise<Set<string>> {
  const wanted = [...new Set(phones)];
  if (wanted.length === 0) return new Set();
  const [guarded, projected] = await Promise.all([
    db
      .selectFrom('opt_out_guards')
      .select('phone')
      .where('account_id', '=', accountId)
      .where('phone', 'in', wanted)
      .execute(),
    db
      .selectFrom('conversations')
      .select('phone')
      .where('account_id', '=', accountId)
      .where('phone', 'in', wanted)
      .where('opted_out', '=', true)
      .execute(),
  ]);
  return new Set([...guarded, ...projected].map((row) => row.phone));
}

/**
 * Of `phones`, those with an opt-out answered to Twilio whose decision is still queued (a guard row),
 * in one query. For a caller that has the conversations loaded already: with `conversations.opted_out`
 * this is what `optedOutPhones` answers, without reading the conversations a second time.
 */
export async function pendingOptOutPhones(
  db: Kysely<Database> | Transaction<Database>,
  accountId: string,
  phones: readonly string[],
): Promise<Set<string>> {
  const wanted = [...new Set(phones)];
  if (wanted.length === 0) return new Set();
  const guarded = await db
    .selectFrom('opt_out_guards')
    .select('phone')
    .where('account_id', '=', accountId)
    .where('phone', 'in', wanted)
    .execute();
  return new Set(guarded.map((row) => row.phone));
}
