import type { Kysely } from 'kysely';
import type { Database } from './db/schema';

/**
 * The first account to claim a MessageSid owns it: claims every SID given (in one statement) and returns
 * each one's owner.
 */
export async function claimReceipts(
  db: Kysely<Database>,
  claims: readonly { sid: string; accountId: string; at: Date }[],
): Promise<Map<string, string>> {
  const first = new Map<string, (typeof claims)[number]>();
  for (const claim of claims) if (!first.has(claim.sid)) first.set(claim.sid, claim);
  if (first.size === 0) return new Map();
  await db
    .insertInto('inbound_receipts')
    .values(
      [...first.values()].map(({ sid, accountId, at }) => ({
        message_sid: sid,
        account_id: accountId,
        received_at: at,
        decided_at: null,
      })),
    )
    .onConflict((oc) => oc.column('message_sid').doNothing())
    .execute();
  const rows = await db
    .selectFrom('inbound_receipts')
    .select(['message_sid', 'account_id'])
    .where('message_sid', 'in', [...first.keys()])
    .execute();
  return new Map(rows.map((row) => [row.message_sid, row.account_id]));
}
