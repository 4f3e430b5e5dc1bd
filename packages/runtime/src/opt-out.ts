import type { Kysely, Transaction } from 'kysely';
import type { Database } from './db/schema';

type Reader = Kysely<Database> | Transaction<Database>;

/**
 * Of `phones`, those with an opt-out answered to Twilio whose decision is still queued (a guard row the
 * inbound route writes before answering), in one query. For a caller that has the conversations loaded
 * already: with `conversations.opted_out` this is what `optedOutPhones` answers, without reading the
 * conversations a second time.
 */
export async function pendingOptOutPhones(
  db: Reader,
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

/** Whether `phone` has an opt-out answered to Twilio whose decision is still queued. */
export async function hasPendingOptOut(db: Reader, accountId: string, phone: string): Promise<boolean> {
  return (await pendingOptOutPhones(db, accountId, [phone])).has(phone);
}

/**
 * Of `phones`, those to which nothing but compliance replies may go from this account: the projected
 * opt-out (`conversations.opted_out`), or an opt-out answered but not yet decided (see
 * `pendingOptOutPhones`). A send path that has not loaded the conversations asks here right before it
 * sends, so a STOP takes effect the moment it is acknowledged, whatever the projector's lag.
 */
export async function optedOutPhones(
  db: Reader,
  accountId: string,
  phones: readonly string[],
): Promise<Set<string>> {
  const wanted = [...new Set(phones)];
  if (wanted.length === 0) return new Set();
  const [pending, projected] = await Promise.all([
    pendingOptOutPhones(db, accountId, wanted),
    db
      .selectFrom('conversations')
      .select('phone')
      .where('account_id', '=', accountId)
      .where('phone', 'in', wanted)
      .where('opted_out', '=', true)
      .execute(),
  ]);
  return new Set([...pending, ...projected.map((row) => row.phone)]);
}
