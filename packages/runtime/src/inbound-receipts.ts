import type { Kysely } from 'kysely';
import type { Database } from './db/schema';

type Claim = { sid: string; accountId: string; at: Date };

/** Keeps a receipt for each MessageSid given that has none yet (the first account to claim it owns it). */
export async function recordReceipts(db: Kysely<Database>, claims: readonly Claim[]): Promise<void> {
  if (claims.length === 0) return;
  await db
    .insertInto('inbound_receipts')
    .values(
      claims.map(({ sid, accountId, at }) => ({
        message_sid: sid,
        account_id: accountId,
        received_at: at,
        decided_at: null,
      })),
    )
    .onConflict((oc) => oc.column('message_sid').doNothing())
    .execute();
}

/**
 * The first account to claim a MessageSid owns it: claims every SID given (in one statement) and returns
 * each one's owner (read in a second statement, which sees a claim another transaction committed while
 * the first ran; one statement's snapshot would not).
 */
export async function claimReceipts(
  db: Kysely<Database>,
  claims: readonly Claim[],
): Promise<Map<string, string>> {
  const first = new Map<string, Claim>();
  for (const claim of claims) if (!first.has(claim.sid)) first.set(claim.sid, claim);
  if (first.size === 0) return new Map();
  await recordReceipts(db, [...first.values()]);
  const rows = await db
    .selectFrom('inbound_receipts')
    .select(['message_sid', 'account_id'])
    .where('message_sid', 'in', [...first.keys()])
    .execute();
  return new Map(rows.map((row) => [row.message_sid, row.account_id]));
}
