import type { ConsentGrant, ConsentState, ConsentStatus } from '@leadline/domain';
import type { Database } from '@leadline/runtime';
import { sql, type Kysely } from 'kysely';

/**
 * Each number's consent status: its record captured last (ties: recorded last), `granted` or
 * `revoked`; numbers without any record are absent (`none`). One query whatever the number of phones.
 */
export async function consentStatuses(
  db: Kysely<Database>,
  accountId: string,
  phones: readonly string[],
): Promise<Map<string, ConsentStatus>> {
  const wanted = [...new Set(phones)];
  if (wanted.length === 0) return new Map();
  const { rows } = await sql<{ phone: string; action: 'granted' | 'revoked' }>`
    select distinct on (phone) phone, action from consent_records
    where account_id = ${accountId} and phone = any(${wanted}::text[])
    order by phone, captured_at desc, recorded_at desc, id desc`.execute(db);
  return new Map(rows.map((row) => [row.phone, row.action]));
}

/** What the consent rule reads for one number: the account's setting and the number's status. */
export const consentStateOf = (
  account: { consent_required: boolean },
  statuses: ReadonlyMap<string, ConsentStatus>,
  phone: string,
): ConsentState => ({ required: account.consent_required, status: statuses.get(phone) ?? 'none' });

/** `consentStateOf` for one number, read now. */
export async function consentState(
  db: Kysely<Database>,
  account: { id: string; consent_required: boolean },
  phone: string,
): Promise<ConsentState> {
  return consentStateOf(account, await consentStatuses(db, account.id, [phone]), phone);
}

/** The grants each number already has, so the same grant is not recorded twice. */
export async function recordedGrants(
  db: Kysely<Database>,
  accountId: string,
  phones: readonly string[],
): Promise<Map<string, ConsentGrant[]>> {
  const wanted = [...new Set(phones)];
  if (wanted.length === 0) return new Map();
  const rows = await db
    .selectFrom('consent_records')
    .select(['phone', 'method', 'captured_at', 'source_url', 'ip_address', 'disclosure_text', 'evidence_url'])
    .where('account_id', '=', accountId)
    .where('phone', 'in', wanted)
    .where('action', '=', 'granted')
    .execute();
  const grants = new Map<string, ConsentGrant[]>();
  for (const { phone, captured_at, ...grant } of rows) {
    grants.set(phone, [...(grants.get(phone) ?? []), { ...grant, captured_at: captured_at.toISOString() }]);
  }
  return grants;
}
