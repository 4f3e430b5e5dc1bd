import type { Database } from '@leadline/runtime';
import { sql, type Kysely, type Selectable } from 'kysely';

export type WorkRow = Selectable<Database['carrier_registration_work']>;

/**
 * Leases up to `limit` registrations due at `now`, earliest first. Another worker skips them (SKIP
 * LOCKED while claiming, the lease after); a crashed worker's leases run out and the registrations are
 * due again. Claiming decides nothing: what was done is recorded under the account's lock afterwards.
 */
export async function claimDue(db: Kysely<Database>, now: Date, leaseMs: number, limit: number) {
  const { rows } = await sql<WorkRow>`
    update carrier_registration_work w
    set lease_until = ${new Date(now.getTime() + leaseMs)}
    where w.account_id in (
      select account_id from carrier_registration_work
      where due_at <= ${now} and (lease_until is null or lease_until < ${now})
      order by due_at, account_id
      limit ${limit}
      for update skip locked)
    returning w.*`.execute(db);
  return rows;
}

/**
 * Gives the registration back, due `at`, noting a failed call (`error`) or clearing the count of them.
 * Only while it is still the same submission: a new one queued meanwhile keeps its own schedule.
 */
export async function reschedule(
  db: Kysely<Database>,
  claim: WorkRow,
  at: Date,
  now: Date,
  error?: { failures: number; message: string },
) {
  await db
    .updateTable('carrier_registration_work')
    .set({
      due_at: at,
      lease_until: null,
      failures: error?.failures ?? 0,
      last_error: error?.message ?? null,
      updated_at: now,
    })
    .where('account_id', '=', claim.account_id)
    .where('submission_id', '=', claim.submission_id)
    .execute();
}

/** Gives the registration back as it was, due as before: its lease goes. */
export async function release(db: Kysely<Database>, claim: WorkRow) {
  await db
    .updateTable('carrier_registration_work')
    .set({ lease_until: null })
    .where('account_id', '=', claim.account_id)
    .where('submission_id', '=', claim.submission_id)
    .execute();
}

/** Nothing is left to do for the submission (every step approved, or one failed). */
export async function finish(db: Kysely<Database>, claim: Pick<WorkRow, 'account_id' | 'submission_id'>) {
  await db
    .deleteFrom('carrier_registration_work')
    .where('account_id', '=', claim.account_id)
    .where('submission_id', '=', claim.submission_id)
    .execute();
}

/** How many registrations wait, and how late the most overdue is (for /metrics). */
export async function queueMeasure(db: Kysely<Database>, now: Date) {
  const { rows } = await sql<{ depth: string; lateness: number | null }>`
    select count(*)::text as depth,
           extract(epoch from ${now}::timestamptz - min(due_at) filter (where due_at <= ${now}))::float8 as lateness
    from carrier_registration_work`.execute(db);
  return { depth: Number(rows[0]?.depth ?? 0), latenessSeconds: rows[0]?.lateness ?? 0 };
}
