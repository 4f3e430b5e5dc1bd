import type { Database } from '@leadline/runtime';
import { sql, type Kysely } from 'kysely';

export interface DueStep {
  enrollment_id: string;
  step_order: number;
  account_id: string;
  partner_id: string;
  next_step_at: Date;
}

export interface ClaimOptions {
  /** How many accounts one claim takes steps of (each up to the per-account limit). */
  accounts?: number;
  /** Accounts whose steps this process is deciding now: their next steps wait for that to end. */
  skipAccounts?: readonly string[];
}

/**
 * Leases due steps for `leaseMs`, account by account: the accounts whose earliest due step is the
 * earliest (at most `options.accounts` of them), and up to `perAccount` due steps of each, earliest
 * first. Each account's steps are decided together in one command (one lock, one append), so a claim
 * is shaped by account rather than by due time alone. Another sequencer skips the steps (SKIP LOCKED
 * while claiming, the lease after), and a crashed sequencer's leases run out. Paused enrollments
 * (deactivated account, inactive sequence) are not due; when the pause ends, each one's overdue step is
 * due once. Steps held for consent are not due either, until a grant (or the account no longer
 * requiring consent) lifts the hold. Claiming decides nothing: each step is decided under its account's lock afterwards, so a
 * step claimed twice (a lease that ran out mid-send) is still sent once.
 */
export async function claimDueSteps(
  db: Kysely<Database>,
  now: Date,
  leaseMs: number,
  perAccount: number,
  options: ClaimOptions = {},
) {
  const skipAccounts = [...(options.skipAccounts ?? [])];
  const accounts = options.accounts ?? 1_000_000;
  const { rows } = await sql<DueStep>`
    with due_accounts as (
      select e.account_id, min(e.next_step_at) as first_due
      from sequence_enrollments e
      join accounts a on a.id = e.account_id and a.status = 'active'
      join sequences s on s.id = e.sequence_id and s.is_active
      left join sequencer_leases l on l.enrollment_id = e.id and l.step_order = e.current_step
      where e.status = 'active' and not e.awaiting_ai and e.next_step_at <= ${now}
        and e.hold_reason is distinct from 'no_consent'
        and not (e.account_id = any(${skipAccounts}::text[]))
        and (l.lease_until is null or l.lease_until < ${now})
      group by e.account_id
      order by first_due, e.account_id
      limit ${accounts}
    ), due as (
      select d.* from due_accounts, lateral (
        select e.id, e.current_step, e.account_id, a.partner_id, e.next_step_at
        from sequence_enrollments e
        join accounts a on a.id = e.account_id and a.status = 'active'
        join sequences s on s.id = e.sequence_id and s.is_active
        left join sequencer_leases l on l.enrollment_id = e.id and l.step_order = e.current_step
        where e.account_id = due_accounts.account_id
          and e.status = 'active' and not e.awaiting_ai and e.next_step_at <= ${now}
          and e.hold_reason is distinct from 'no_consent'
          and (l.lease_until is null or l.lease_until < ${now})
        order by e.next_step_at, e.id
        limit ${perAccount}
        for update of e skip locked
      ) d
    ), leased as (
      insert into sequencer_leases (enrollment_id, step_order, lease_until)
      select id, current_step, ${new Date(now.getTime() + leaseMs)} from due
      on conflict (enrollment_id, step_order) do update set lease_until = excluded.lease_until
    )
    select due.id as enrollment_id, due.current_step as step_order, due.account_id, due.partner_id,
      due.next_step_at
    -- Every row claimed is leased (the upsert always writes), and a data-modifying CTE runs to its end
    -- whether or not it is read: no join with it (a join of two CTEs compares every pair of rows).
    from due
    order by due.account_id, due.next_step_at, due.id`.execute(db);
  return rows;
}

/**
 * Hands steps back: their leases go (a step held to a later time is claimed as soon as it is due
 * again), or, with `until`, last until then (a claim that failed is tried again after its backoff).
 */
export async function releaseLeases(db: Kysely<Database>, steps: readonly DueStep[], until?: Date) {
  if (steps.length === 0) return;
  const enrollmentIds = steps.map((step) => step.enrollment_id);
  const stepOrders = steps.map((step) => step.step_order);
  await (
    until
      ? sql`
        update sequencer_leases l set lease_until = ${until}
        from unnest(${enrollmentIds}::text[], ${stepOrders}::int[]) as done(enrollment_id, step_order)
        where l.enrollment_id = done.enrollment_id and l.step_order = done.step_order`
      : sql`
        delete from sequencer_leases l
        using unnest(${enrollmentIds}::text[], ${stepOrders}::int[]) as done(enrollment_id, step_order)
        where l.enrollment_id = done.enrollment_id and l.step_order = done.step_order`
  ).execute(db);
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
