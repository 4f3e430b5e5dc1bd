import type { Kysely } from 'kysely';
import type { Database } from './db/schema';

/**
 * Queues an account's new submission for the registration worker, due `at`. Written in the command's
 * transaction: it commits with the submission's event, or not at all. A submission replaces the one
 * before (its lease too: the worker's outcome for the old one is then not recorded).
 */
export async function queueRegistration(
  db: Kysely<Database>,
  work: { accountId: string; partnerId: string; submissionId: string; at: Date },
): Promise<void> {
  await db
    .insertInto('carrier_registration_work')
    .values({
      account_id: work.accountId,
      partner_id: work.partnerId,
      submission_id: work.submissionId,
      due_at: work.at,
      lease_until: null,
      failures: 0,
      last_error: null,
      updated_at: work.at,
    })
    .onConflict((oc) =>
      oc.column('account_id').doUpdateSet((eb) => ({
        partner_id: eb.ref('excluded.partner_id'),
        submission_id: eb.ref('excluded.submission_id'),
        due_at: eb.ref('excluded.due_at'),
        lease_until: null,
        failures: 0,
        last_error: null,
        updated_at: eb.ref('excluded.updated_at'),
      })),
    )
    .execute();
}

/**
 * The provider says something changed for this submission (a status callback): its registration is
 * due now rather than at its next scheduled look. Whatever the callback said is read again from the
 * provider, so a forged or stale callback can only cause one look too many. Returns whether the
 * submission was waiting for anything.
 */
export async function registrationDueNow(
  db: Kysely<Database>,
  work: { accountId: string; submissionId: string; at: Date },
): Promise<boolean> {
  const result = await db
    .updateTable('carrier_registration_work')
    .set({ due_at: work.at, updated_at: work.at })
    .where('account_id', '=', work.accountId)
    .where('submission_id', '=', work.submissionId)
    .where('due_at', '>', work.at)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
