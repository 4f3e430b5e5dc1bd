import type { Database } from '@leadline/runtime';
import { sql, type Kysely } from 'kysely';

export interface DueStep {
  enrollment_id: string;
  step_order: number;
  account_id: string;
  partner_id: string;
  next_step_at: Date;
}

/**
 * Leases up to `limit` due steps, earliest first, for `leaseMs`: another sequencer skips them (SKIP
 * LOCKED while claiming, the lease after), and a crashed sequencer's leases run out. Paused enrollments
 * (deactivated account, inactive sequence) are not due; when the pause ends, each one's overdue step is
 * due once. Claiming decides nothing: each step is decided under its account's lock afterwards, so a
 * step claimed twice (a lease that ran out mid-send) is still sent once.
 */
export async function claimDueSteps(
  db: Kysely<Database>,
  now: Date,
  leaseMs: number,
  limit: number,
  /** Accounts whose steps this process is deciding now: their next steps wait for that to end. */
  skipAccounts: readonly string[] = [],
) {
  const { rows } = await sql<DueStep>`
    with due as (
      select e.id, e.current_step, e.account_id, a.partner_id, e.next_step_at
      from sequence_enrollments e
      join accounts a on a.id = e.account_id and a.status = 'active'
      join sequences s on s.id = e.sequence_id and s.is_active
      left join sequencer_leases l on l.enrollment_id = e.id and l.step_order = e.current_step
      where e.status = 'active' and not e.awaiting_ai and e.next_step_at <= ${now}
        and not (e.account_id = any(${[...skipAccounts]}::text[]))
        and (l.lease_until is null or l.lease_until < ${now})
      order by e.next_step_at, e.id
      limit ${limit}
      for update of e skip locked
    ), leased as (
      insert into sequencer_leases (enrollment_id, step_order, lease_until)
      select id, current_step, ${new Date(now.getTime() + leaseMs)} from due
      on conflict (enrollment_id, step_order) do update set lease_until = excluded.lease_until
      returning enrollment_id
    )
    select due.id as enrollment_id, due.current_step as step_order, due.account_id, due.partner_id,
      due.next_step_at
    from due join leased on leased.enrollment_id = due.id`.execute(db);
  return rows;
}

/** Steps deferred to a later time: their leases go, so they are claimed as soon as they are due again. */
export async function releaseLeases(db: Kysely<Database>, steps: readonly DueStep[]) {
  if (steps.length === 0) return;
  await sql`
    delete from sequencer_leases l
    using unnest(${steps.map((step) => step.enrollment_id)}::text[], ${steps.map((step) => step.step_order)}::int[])
      as done(enrollment_id, step_order)
    where l.enrollment_id = done.enrollment_id and l.step_order = done.step_order`.execute(db);
}

/**
 * Leases that ran out are of steps long done (or to be claimed afresh): they go. Rows another
 * sequencer is claiming are skipped rather than waited for (a wait could deadlock with its claim).
 */
export async function expireLeases(db: Kysely<Database>, now: Date) {
  await sql`
    delete from sequencer_leases where (enrollment_id, step_order) in (
      select enrollment_id, step_order from sequencer_leases where lease_until < ${now}
      for update skip locked)`.execute(db);
}
