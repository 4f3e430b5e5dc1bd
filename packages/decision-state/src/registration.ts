import {
  REGISTRATION_STEPS,
  type Registration,
  type RegistrationStatus,
  type RegistrationStep,
  type RegistrationStepState,
} from '@leadline/domain';
import type { Database } from '@leadline/runtime';
import type { Kysely, Selectable } from 'kysely';

export type RegistrationRow = Selectable<Database['carrier_registrations']>;

export function toRegistration(row: RegistrationRow): Registration {
  const step = (name: RegistrationStep): RegistrationStepState => ({
    status: row[`${name}_status`],
    reason: row[`${name}_reason`],
    updated_at: new Date(row[`${name}_updated_at`]),
  });
  return {
    submission_id: row.submission_id,
    profile: row.profile,
    tax_id: { last4: row.tax_id_last4, ciphertext: row.tax_id_ciphertext },
    submitted_at: new Date(row.submitted_at),
    steps: Object.fromEntries(REGISTRATION_STEPS.map((name) => [name, step(name)])) as Registration['steps'],
    resources: row.resources,
  };
}

export function findRegistrationRow(db: Kysely<Database>, accountId: string) {
  return db
    .selectFrom('carrier_registrations')
    .selectAll()
    .where('account_id', '=', accountId)
    .executeTakeFirst();
}

/** An account's current registration, or undefined when it never submitted one. */
export async function accountRegistration(
  db: Kysely<Database>,
  accountId: string,
): Promise<Registration | undefined> {
  const row = await findRegistrationRow(db, accountId);
  return row && toRegistration(row);
}

/**
 * The campaign status of each account: what the carriers' sending rule reads (see registrationHold).
 * An account that never submitted a registration is absent.
 */
export async function campaignStatuses(
  db: Kysely<Database>,
  accountIds: readonly string[],
): Promise<Map<string, RegistrationStatus>> {
  if (accountIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('carrier_registrations')
    .select(['account_id', 'campaign_status'])
    .where('account_id', 'in', [...accountIds])
    .execute();
  return new Map(rows.map((row) => [row.account_id, row.campaign_status]));
}
