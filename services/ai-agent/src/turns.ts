import type { Database } from '@leadline/runtime';
import { sql, type Kysely, type Selectable } from 'kysely';

/**
 * The AI agent's queue in Postgres: a pending turn per conversation (its burst of inbound messages) or
 * per AI sequence step, leased while it is worked on. The statements live here; the worker runtime
 * runs the loop (turns-queue.ts).
 */
export type TurnRow = Selectable<Database['ai_pending_turns']>;
export type PendingMessage = Selectable<Database['ai_pending_messages']>;

/** A leased turn and the inbound messages it answers (none for a sequence step). */
export interface ClaimedTurn {
  turn: TurnRow;
  messages: PendingMessage[];
}

/**
 * How long a claimed turn stays with its worker: past it (the process died) it is due again. At least
 * twice the turn's time budget, so a turn is never handed back for a lease too short to run it in.
 */
export const leaseMsFor = (budgetMs: number) => Math.max(5 * 60_000, 2 * budgetMs);

/**
 * Leases up to `limit` due turns, earliest first; another worker's are skipped, not waited for. At most
 * `perAccount` of one account's turns are held by a worker at once (`held`: those it holds already), so
 * a busy account's turns wait in the queue, not in a worker, and never take a claim's room from the
 * turns of other accounts.
 */
export async function leaseDueTurns(
  db: Kysely<Database>,
  now: Date,
  options: { limit: number; leaseMs: number; perAccount: number; held: ReadonlyMap<string, number> },
): Promise<TurnRow[]> {
  const heldAccounts = [...options.held.keys()];
  const heldCounts = heldAccounts.map((account) => options.held.get(account)!);
  const { rows } = await sql<TurnRow>`
    update ai_pending_turns set lease_until = ${new Date(now.getTime() + options.leaseMs)}
    where id in (
      select t.id from ai_pending_turns t
      join (
        select id, row_number() over (partition by account_id order by due_at, id) as rank
        from ai_pending_turns
        where due_at <= ${now} and (lease_until is null or lease_until < ${now})
      ) due on due.id = t.id
      left join unnest(${heldAccounts}::text[], ${heldCounts}::int[]) as held(account_id, count)
        on held.account_id = t.account_id
      where due.rank <= ${options.perAccount} - coalesce(held.count, 0)
      order by t.due_at, t.id
      limit ${options.limit}
      for update of t skip locked
    )
    returning *`.execute(db);
  return rows;
}

/**
 * The messages of each leased inbound turn's burst, read once for all of them (a message queued after
 * this read is the next burst, answered when this turn is finished).
 */
export async function burstsOf(db: Kysely<Database>, turns: readonly TurnRow[]): Promise<ClaimedTurn[]> {
  const inbound = turns.filter((turn) => turn.kind === 'inbound').map((turn) => turn.id);
  const messages =
    inbound.length === 0
      ? []
      : await db
          .selectFrom('ai_pending_messages')
          .selectAll()
          .where('turn_id', 'in', inbound)
          .orderBy('received_at')
          .orderBy('message_id')
          .execute();
  const byTurn = Map.groupBy(messages, (message) => message.turn_id);
  return turns.map((turn) => ({ turn, messages: byTurn.get(turn.id) ?? [] }));
}

/** Hands turns back: due again at `until`, or at once (their attempts are not counted). */
export async function releaseTurns(db: Kysely<Database>, ids: readonly string[], until: Date | null) {
  if (ids.length === 0) return;
  await db
    .updateTable('ai_pending_turns')
    .set({ lease_until: until })
    .where('id', 'in', [...ids])
    .execute();
}

/** A turn due again at `at`, unleased; its failed attempts start over unless `failure` counts one more. */
export async function turnDueAt(
  db: Kysely<Database>,
  turn: TurnRow,
  at: Date,
  failure?: { firstFailureAt: Date },
) {
  await db
    .updateTable('ai_pending_turns')
    .set({
      due_at: at,
      lease_until: null,
      attempts: failure ? turn.attempts + 1 : 0,
      first_failure_at: failure ? failure.firstFailureAt : null,
    })
    .where('id', '=', turn.id)
    .execute();
}

/**
 * Takes an answered turn out of the queue with the messages it answered. Returns true when messages
 * arrived meanwhile: they are the next burst, due when their own delay ends, and the turn stays for them
 * (a sequence step's turn never does). One statement, `finish_ai_turn` (migration 0020): it locks the
 * turn's row before it looks for such messages, so a message queued meanwhile (its intake upserts this
 * row) is either committed and seen, or queued after it under a new row. Without the lock, a turn
 * deleted after the intake's upsert left that message with no turn to answer it.
 */
export async function finishTurn(
  db: Kysely<Database>,
  turn: TurnRow,
  messageIds: readonly string[],
): Promise<boolean> {
  const keepForNextBurst = turn.kind !== 'step';
  const finished = sql<{ next_burst: boolean }>`
    select finish_ai_turn(${turn.id}, ${[...messageIds]}::text[], ${keepForNextBurst}) as next_burst`;
  const { rows } = await finished.execute(db);
  return rows[0]!.next_burst;
}

/** When the next turn falls due, or a lease another worker holds runs out. */
export async function nextTurnDue(db: Kysely<Database>): Promise<Date | null> {
  const { rows } = await sql<{ next: Date | null }>`
    select min(greatest(due_at, coalesce(lease_until, due_at))) as next from ai_pending_turns`.execute(db);
  return rows[0]?.next ?? null;
}

/** Depth and lateness of the queue, for its gauges. */
export async function measureTurns(db: Kysely<Database>, now: Date) {
  const { rows } = await sql<{ depth: string; lateness: number | null }>`
    select count(*)::text as depth,
           extract(epoch from ${now}::timestamptz - min(due_at) filter (where due_at <= ${now}))::float8 as lateness
    from ai_pending_turns`.execute(db);
  return { depth: Number(rows[0]?.depth ?? 0), latenessSeconds: rows[0]?.lateness ?? 0 };
}
