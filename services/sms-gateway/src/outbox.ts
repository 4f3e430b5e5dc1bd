import type { EventOf } from '@leadline/events';
import { leaseUntil, type Database, type OutboxReport } from '@leadline/runtime';
import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';

export type OutboxRow = Selectable<Database['sms_outbox']>;

/**
 * Sequence steps and AI replies follow the sending window of their sequence (the sequencer decides
 * when they are due), so they never expire by age; manual messages and compliance replies do.
 */
export const expirable = (request: EventOf<'message.outbound_requested'>) =>
  !request.data.sequence_step &&
  request.data.source !== 'sequence' &&
  request.data.source !== 'ai' &&
  !(request.actor.kind === 'system' && request.actor.service === 'ai-agent');

/**
 * A sequence step (fixed or AI-written) is a proactive message: besides the sequencer's decision that
 * it is due, it leaves only inside the lead's sending window, whenever the gateway's pace lets it go.
 */
export const proactive = (request: EventOf<'message.outbound_requested'>) =>
  request.data.source === 'sequence' || request.data.sequence_step !== undefined;

/**
 * One row per requested message, inserted when the request is consumed. The primary key is the
 * message id, so a request consumed twice (a redelivery, a consumer restarted from an old offset)
 * is one row and is sent at most once.
 */
export async function enqueue(
  db: Kysely<Database>,
  requests: readonly EventOf<'message.outbound_requested'>[],
) {
  if (requests.length === 0) return;
  await db
    .insertInto('sms_outbox')
    .values(
      requests.map((event) => ({
        message_id: event.data.message_id,
        account_id: event.account_id,
        partner_id: event.partner_id,
        phone: event.data.phone,
        body: event.data.body,
        source: event.data.source,
        correlation_id: event.correlation_id,
        causation_id: event.id,
        requested_at: event.occurred_at,
        expirable: expirable(event),
        answers: event.data.answers ?? null,
        proactive: proactive(event),
      })),
    )
    .onConflict((oc) => oc.column('message_id').doNothing())
    .execute();
}

/**
 * The rows in play, ranked per account: each account's pending rows in order (`turn`; compliance
 * replies first, so an opt-out confirmation is never paced behind a backlog past its five minutes), and whether any
 * of its rows is held (`busy`: a live lease on a pending or in-flight row, or on a row settled and not
 * yet reported). Of every account, or of `accounts` only (each account is ranked on its own rows, so
 * leaving the others out changes nothing for these).
 */
const rankedRows = (now: Date, accounts?: readonly string[]) => sql`
  select message_id, account_id, state, created_at, source,
    row_number() over (partition by account_id, state
      order by (source = 'system') desc, created_at, message_id) as turn,
    bool_or(coalesce(lease_until > ${now}, false)) over (partition by account_id) as busy
  from sms_outbox
  -- Each alternative is the predicate of a partial index, so the rows in play are found through them;
  -- "state in ('pending', 'sending')" matches no partial index and would read the whole outbox, every
  -- row ever sent, on every claim.
  where ((state = 'pending' and (held_until is null or held_until <= ${now}))
    or state = 'sending' or (report is not null and reported_at is null))
    ${accounts ? sql`and account_id = any(${accounts}::text[])` : sql``}`;

/**
 * Leases up to `limit` pending rows for `leaseMs`: the oldest `perAccount` of each account that no
 * instance is working on, oldest accounts first. So one account's messages are sent by one worker of
 * one instance at a time, in order, and their outcomes reach the log in that order too: the next pass
 * waits until the previous one has appended its outcomes. A backlog of one account cannot take the
 * whole claim. A crashed instance's lease runs out.
 *
 * Two claims running at once (two workers, two instances) must not split one account's rows between
 * them: each would see the account free in its snapshot, lock some of its rows, and send them side by
 * side and out of order; a message would no longer wait for the one before it to leave, so an opt-out
 * arriving while that one waits on the provider would not stop it. So the accounts are chosen first and
 * each is locked for the claim's transaction (an account another claim holds is passed over), and the
 * rows are claimed by a second statement: its snapshot is taken after the locks, so it sees every claim
 * committed before them, and an account leased meanwhile is busy.
 */
export async function claimPending(
  db: Kysely<Database>,
  now: Date,
  leaseMs: number,
  limit: number,
  perAccount: number,
  /** At most this many accounts; the rows are leased under `token` (marked in flight only under it). */
  options: { accounts?: number; token?: string } = {},
): Promise<OutboxRow[]> {
  const accountLimit = options.accounts ?? 1_000_000;
  const claim = async (trx: Kysely<Database>) => {
    // The free accounts, oldest first, are locked one by one until their rows fill the claim: an account
    // another claim holds is passed over for the next, and no account is locked that this claim will
    // not take (a claim at the same instant finds the rest free).
    const { rows: accounts } = await sql<{ account_id: string }>`
      with recursive free as (
        select account_id, least(count(*), ${perAccount}) as claimable,
          row_number() over (order by min(created_at), account_id) as place
        from (${rankedRows(now)}) ranked
        where state = 'pending' and not busy
        group by account_id
      ), walk(place, account_id, locked, rows_taken, accounts_taken) as (
        select 0::bigint, null::text, false, 0::bigint, 0::bigint
        union all
        select free.place, free.account_id, attempt.locked,
          walk.rows_taken + case when attempt.locked then free.claimable else 0 end,
          walk.accounts_taken + case when attempt.locked then 1 else 0 end
        from walk
        join free on free.place = walk.place + 1
        cross join lateral (
          select pg_try_advisory_xact_lock(hashtextextended('sms-gateway.claim:' || free.account_id, 0)) as locked
        ) attempt
        where walk.rows_taken < ${limit} and walk.accounts_taken < ${accountLimit}
      )
      select account_id from walk where locked`.execute(trx);
    if (accounts.length === 0) return [];
    const locked = accounts.map((account) => account.account_id);
    const { rows } = await sql<OutboxRow>`
      update sms_outbox
      set lease_until = ${leaseUntil(now, leaseMs)}, updated_at = ${now}, claim_token = ${options.token ?? null}
      where message_id in (
        select message_id from sms_outbox
        where state = 'pending' and message_id in (
          select message_id from (${rankedRows(now, locked)}) ranked
          where state = 'pending' and turn <= ${perAccount} and not busy
          order by (source = 'system') desc, created_at, message_id
          limit ${limit}
        )
        for update skip locked
      )
      returning *`.execute(trx);
    return rows;
  };
  const rows = db.isTransaction ? await claim(db) : await db.transaction().execute(claim);
  return rows.sort(
    (a, b) =>
      Number(b.source === 'system') - Number(a.source === 'system') ||
      a.created_at.getTime() - b.created_at.getTime() ||
      a.message_id.localeCompare(b.message_id),
  );
}

/**
 * Settles refused rows as failed, with the event that reports it, in the caller's (short) transaction;
 * the event is appended only after this commits, so a message reported failed can never go out later.
 * One statement whatever their number; returns the ids it settled (a row another instance already took
 * is left alone).
 */
export async function settleRefused(
  db: Kysely<Database>,
  refused: readonly { messageId: string; report: OutboxReport }[],
  now: Date,
): Promise<Set<string>> {
  if (refused.length === 0) return new Set();
  const { rows } = await sql<{ message_id: string }>`
    update sms_outbox as o set state = 'failed', report = v.report::jsonb, updated_at = ${now}
    from unnest(${refused.map((entry) => entry.messageId)}::text[],
                ${refused.map((entry) => JSON.stringify(entry.report))}::text[]) as v(message_id, report)
    where o.message_id = v.message_id and o.state = 'pending'
    returning o.message_id`.execute(db);
  return new Set(rows.map((row) => row.message_id));
}

/** A send's outcome not yet written: it is settled with the next claim, in the same statement. */
export interface OwedSettlement {
  messageId: string;
  report: OutboxReport;
}

/**
 * Committed before the provider is called: from here on the message may have left, so the row is
 * never sent again, only settled (sent or failed) by what we learn. `taken` when the row is not
 * pending under our claim any more (handed back, or taken by another instance after our lease ran
 * out); `opted_out` when the number opted out since the row was decided (the read models learned it
 * meanwhile): the row stays pending, for a new decision to refuse.
 *
 * `previous`, the outcome of the send before, is settled in the same statement (one commit for both:
 * each commit waits for the disk, and a backlog is sent one commit per message instead of two);
 * `settledPrevious` says whether it still was `sending`. The row's lease is renewed: while it is in
 * flight its account stays with this worker, however long the batch before it took.
 *
 * `pace`, the number's slot (see claimPaceStatement), is claimed in the same statement, and the row is
 * marked only if it was: `pace_taken` when another pass took the slot; `paced` says whether this
 * statement claimed it (it does even when the opt-out check then stops the row: that slot goes unused).
 */
export async function markSending(
  db: Kysely<Database>,
  messageId: string,
  now: Date,
  leaseMs: number,
  /** The claim the row was leased under: a row handed back or claimed by another worker since is `taken`. */
  token: string | null,
  previous?: OwedSettlement,
  pace?: RawBuilder<unknown>,
): Promise<{
  claim: 'sending' | 'taken' | 'opted_out' | 'pace_taken';
  settledPrevious: boolean;
  paced: boolean;
}> {
  const settle = previous
    ? settleStatement(previous.messageId, now, previous.report)
    : sql`select 1 where false`;
  const { rows } = await sql<{ marked: number; pending: boolean; settled: number; paced: number }>`
    with settled as (${settle}),
    paced as (${pace ?? sql`select 1`}),
    marked as (
      update sms_outbox
      set state = 'sending', sending_at = ${now}, updated_at = ${now}, lease_until = ${leaseUntil(now, leaseMs)}
      where message_id = ${messageId} and state = 'pending' and claim_token is not distinct from ${token}
        and exists (select 1 from paced)
        and (source = 'system' or not exists (
          select 1 from conversations c
          where c.account_id = sms_outbox.account_id and c.phone = sms_outbox.phone and c.opted_out
        ) and not exists (
          select 1 from opt_out_guards g
          where g.account_id = sms_outbox.account_id and g.phone = sms_outbox.phone
        ))
      returning 1
    )
    select
      (select count(*) from marked)::int as marked,
      -- Every part of the statement sees the rows as they were before it: pending here and not marked
      -- means the opt-out check stopped it.
      exists (select 1 from sms_outbox where message_id = ${messageId} and state = 'pending'
        and claim_token is not distinct from ${token}) as pending,
      (select count(*) from settled)::int as settled,
      (select count(*) from paced)::int as paced`.execute(db);
  const { marked, pending, settled, paced } = rows[0]!;
  return {
    claim: marked === 1 ? 'sending' : paced === 0 ? 'pace_taken' : pending ? 'opted_out' : 'taken',
    settledPrevious: settled === 1,
    paced: pace !== undefined && paced === 1,
  };
}

const settleStatement = (messageId: string, now: Date, report: OutboxReport | null) => sql`
  update sms_outbox set
    state = ${report?.type === 'message.failed' ? 'failed' : 'sent'},
    updated_at = ${now},
    report = ${report && JSON.stringify(report)}::jsonb,
    reported_at = ${report ? null : now}::timestamptz,
    provider_message_id = coalesce(${report?.type === 'message.sent' ? report.data.provider_message_id : null}::text, provider_message_id)
  where message_id = ${messageId} and state = 'sending'
  returning 1`;

/**
 * Records what became of a send: the terminal state and the event that reports it (null when the log
 * already has it). Only a row still `sending` is settled, so two instances never settle it twice.
 */
export async function settleSending(
  db: Kysely<Database>,
  messageId: string,
  now: Date,
  report: OutboxReport | null,
): Promise<boolean> {
  const { rows } = await settleStatement(messageId, now, report).execute(db);
  return rows.length === 1;
}

/**
 * Hands a claim's rows that are still pending back: free again at `until` (at once without it). Rows in
 * flight keep their lease (they are never sent again; their account stays busy until they are settled).
 */
export async function releaseClaim(
  db: Kysely<Database>,
  messageIds: readonly string[],
  token: string,
  until?: Date,
) {
  if (messageIds.length === 0) return;
  await db
    .updateTable('sms_outbox')
    .set({ lease_until: until ?? null, claim_token: null })
    .where('message_id', 'in', messageIds)
    .where('claim_token', '=', token)
    .where('state', '=', 'pending')
    .execute();
}

export async function markReported(db: Kysely<Database>, messageIds: readonly string[], now: Date) {
  if (messageIds.length === 0) return;
  await db
    .updateTable('sms_outbox')
    .set({ reported_at: now })
    .where('message_id', 'in', messageIds)
    .execute();
}

/**
 * Settles interrupted sends (rows `sending` for longer than `graceMs`) in one short transaction: the
 * rows are claimed with SKIP LOCKED, so two gateways reconciling at once never settle one row twice;
 * `settle` decides each row's fate from what the read models know (it reads, it calls nothing remote)
 * and returns its report, or undefined to leave the row for later.
 */
export async function settleInterrupted(
  db: Kysely<Database>,
  now: Date,
  graceMs: number,
  settle: (trx: Kysely<Database>, row: OutboxRow) => Promise<{ report: OutboxReport | null } | undefined>,
): Promise<OutboxRow[]> {
  return db.transaction().execute(async (trx) => {
    const rows = await trx
      .selectFrom('sms_outbox')
      .selectAll()
      .where('state', '=', 'sending')
      .where('sending_at', '<', new Date(now.getTime() - graceMs))
      .orderBy('sending_at')
      .limit(100)
      .forUpdate()
      .skipLocked()
      .execute();
    const settled: OutboxRow[] = [];
    for (const row of rows) {
      const decided = await settle(trx, row);
      if (decided && (await settleSending(trx, row.message_id, now, decided.report)))
        settled.push({ ...row, report: decided.report });
    }
    return settled;
  });
}

/**
 * Settled rows whose report is still owed after `graceMs` (the instance that settled them died before
 * appending), leased so that one instance re-reports each.
 */
export async function claimUnreported(
  db: Kysely<Database>,
  now: Date,
  graceMs: number,
  leaseMs: number,
): Promise<OutboxRow[]> {
  const { rows } = await sql<OutboxRow>`
    update sms_outbox set lease_until = ${leaseUntil(now, leaseMs)}
    where message_id in (
      select message_id from sms_outbox
      where report is not null and reported_at is null
        and updated_at < ${new Date(now.getTime() - graceMs)}
        and (lease_until is null or lease_until < ${now})
      order by updated_at
      limit 100
      for update skip locked
    )
    returning *`.execute(db);
  return rows;
}

/** A pending row the gateway will not send before `until` (null: until its reason lifts), and why. */
export interface RowHold {
  messageId: string;
  reason: string;
  until: Date;
}

/**
 * Holds pending rows of this claim: each is out of play until its `held_until` (no lease, so the
 * account's other rows, an opt-out confirmation among them, go past it). Returns the ids whose reason
 * changed (first held, or held for another reason): those owe a `message.held`, the others said it.
 */
export async function holdRows(
  db: Kysely<Database>,
  holds: readonly RowHold[],
  token: string | null,
  now: Date,
): Promise<Set<string>> {
  if (holds.length === 0) return new Set();
  const { rows } = await sql<{ message_id: string; changed: boolean }>`
    with previous as (
      select message_id, hold_reason from sms_outbox
      where message_id = any(${holds.map((hold) => hold.messageId)}::text[]) and state = 'pending'
        and claim_token is not distinct from ${token}
      for update
    )
    update sms_outbox as o
    set held_until = v.until, hold_reason = v.reason, lease_until = null, claim_token = null,
      updated_at = ${now}
    from previous,
      unnest(${holds.map((hold) => hold.messageId)}::text[], ${holds.map((hold) => hold.reason)}::text[],
             ${holds.map((hold) => hold.until.toISOString())}::timestamptz[]) as v(message_id, reason, until)
    where o.message_id = v.message_id and previous.message_id = v.message_id
    returning o.message_id, previous.hold_reason is distinct from v.reason as changed`.execute(db);
  return new Set(rows.filter((row) => row.changed).map((row) => row.message_id));
}

/** The account's campaign was approved: its rows held for registration are in play again at once. */
export async function releaseRegistrationHolds(db: Kysely<Database>, accountIds: readonly string[]) {
  if (accountIds.length === 0) return 0;
  const result = await db
    .updateTable('sms_outbox')
    .set({ held_until: null })
    .where('account_id', 'in', [...accountIds])
    .where('state', '=', 'pending')
    .where('hold_reason', '=', 'registration_pending')
    .where('held_until', 'is not', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** When the next pending row comes into play: a hold or a lease (a paced account's next slot) ending. */
export async function nextPendingAt(db: Kysely<Database>, now: Date): Promise<Date | null> {
  const { rows } = await sql<{ next: Date | null }>`
    select min(greatest(coalesce(held_until, ${now}), coalesce(lease_until, ${now}))) as next
    from sms_outbox
    where state = 'pending' and (held_until > ${now} or lease_until > ${now})`.execute(db);
  return rows[0]?.next ?? null;
}

/**
 * Each sending account's queue: its pending rows in play (not held), when its number's next slot is,
 * and the account's own sending rate, for the per-number metrics (see drainSeconds in pacing.ts).
 */
export async function pendingPerNumber(db: Kysely<Database>, now: Date) {
  const { rows } = await sql<{
    depth: number;
    next_send_at: Date | null;
    messages_per_second: number | null;
    daily_cap: number | null;
  }>`
    select count(*)::int as depth, max(p.next_send_at) as next_send_at,
      max(a.messages_per_second) as messages_per_second, max(a.daily_cap) as daily_cap
    from sms_outbox o
    left join sms_number_pace p on p.account_id = o.account_id
    left join accounts a on a.id = o.account_id
    where o.state = 'pending' and (o.held_until is null or o.held_until <= ${now})
    group by o.account_id`.execute(db);
  return rows.map((row) => ({
    depth: row.depth,
    nextSendAt: row.next_send_at,
    rate: { messages_per_second: row.messages_per_second, daily_cap: row.daily_cap },
  }));
}
