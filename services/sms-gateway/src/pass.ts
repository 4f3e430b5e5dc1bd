import { campaignStatuses } from '@leadline/decision-state';
import { DEFAULT_SENDING_WINDOW, type SendingWindow } from '@leadline/domain';
import {
  optedOutPhones,
  runRemoteCall,
  type Clock,
  type Timers,
  type CommandBus,
  type CommandContext,
  type Database,
  type OutboxReport,
  type PersonalDataKeys,
} from '@leadline/runtime';
import type { AcceptedSms, SmsSender } from '@leadline/telephony';
import type { Kysely } from 'kysely';
import { waitOnClock } from './clock-wait';
import {
  holdRows,
  markReported,
  markSending,
  releaseClaim,
  settleRefused,
  settleSending,
  type OutboxRow,
  type OwedSettlement,
  type RowHold,
} from './outbox';
import { numberPace } from './number-pace';
import { claimPace, claimPaceStatement, type PaceClaim } from './pace-store';
import { accountPaceSettings, spacingMs, type PaceSettings } from './pacing';
import {
  expiredBy,
  heldEvent,
  inRequestOrder,
  refusal,
  registrationHoldOf,
  sendReport,
  type AccountClaim,
} from './send-policy';

export interface PassDeps {
  db: Kysely<Database>;
  commands: CommandBus;
  sender: SmsSender;
  clock: Clock;
  decisionBatch: number;
  leaseMs: number;
  sendTimeoutMs: number;
  maxQueueAgeMs: number;
  /** The carriers' sending rule is enforced (see registrationEnforced). */
  registrationEnforced: boolean;
  /** How long a row held for registration waits before it is decided again (an approval releases it at once). */
  registrationRecheckMs: number;
  /**
   * The deployment's throughput for each number and daily cap for each brand, where the account sets
   * neither (its `sending_rate`); undefined sends as fast as the provider takes.
   */
  pacing: PaceSettings | undefined;
  /** The clock's timers: a pass waiting for its number's next slot sleeps on them. */
  timers: Timers;
  /**
   * The longest a pass waits for its number's next slot, on the gateway's clock, instead of handing its
   * rows back (0: never waits); it waits only while `othersCanStart`, and not past `passHoldMs`.
   */
  slotWaitMs: number;
  /** How long, from its start, a pass may keep its account's claim waiting for slots (gateway's clock). */
  passHoldMs: number;
  /** Whether another account could start at once (a worker is free): else a pass does not wait. */
  othersCanStart: () => boolean;
  onError: (error: unknown) => void;
  /** The keyed hash of a number, which finds an opt-out kept past its person's erasure. */
  personalDataKeys: Pick<PersonalDataKeys, 'subjectOf'>;
}

type Settled = { row: OutboxRow; report: OutboxReport };

export const contextOf = (row: OutboxRow): CommandContext => ({
  partnerId: row.partner_id,
  actor: { kind: 'system', service: 'sms-gateway' },
  correlationId: row.correlation_id,
  causationId: row.causation_id,
});

/** Appends what settled rows owe the log, one append per account, then notes them reported. */
export async function report(
  deps: Pick<PassDeps, 'db' | 'commands' | 'clock'>,
  rows: readonly Settled[],
  readYourWrites = false,
) {
  for (const settled of Map.groupBy(rows, ({ row }) => row.account_id).values()) {
    const first = settled[0]!.row;
    await deps.commands.append({
      stream: { topic: 'account', accountId: first.account_id },
      context: contextOf(first),
      // Each outcome traced to its own message's request, though they share one append.
      events: settled.map(({ row, report }) => ({
        ...report,
        correlationId: row.correlation_id,
        causationId: row.causation_id,
      })),
      readYourWrites,
    });
    await markReported(
      deps.db,
      settled.map(({ row }) => row.message_id),
      deps.clock.now(),
    );
  }
}

/**
 * The short decision: under the account's lock, against caught-up read models, refused rows are
 * settled in the same transaction; the rows that may go out are returned with the account's number.
 */
async function decide(
  { commands, clock, ...deps }: PassDeps,
  accountId: string,
  rows: readonly OutboxRow[],
  token: string,
) {
  const { result } = await commands.execute({
    stream: { topic: 'account', accountId },
    context: contextOf(rows[0]!),
    lockKeys: [`account:${accountId}`],
    consistency: 'partition',
    // Its events are the holds it decided; nothing reads them back through the read models.
    readYourWrites: false,
    async decide(trx) {
      const now = clock.now();
      const account = await trx
        .selectFrom('accounts')
        .select(['status', 'phone_number', 'sending_window', 'messages_per_second', 'daily_cap'])
        .where('id', '=', accountId)
        .executeTakeFirst();
      const from = account?.phone_number ?? '';
      const rule = {
        enforced: deps.registrationEnforced,
        // Read only where the rule is enforced: elsewhere it decides nothing, and costs a statement a pass.
        campaignStatus: deps.registrationEnforced
          ? (await campaignStatuses(trx, [accountId])).get(accountId)
          : undefined,
        from,
      };
      // The projected opt-outs, STOPs already answered whose decisions are still queued, and opt-outs
      // kept past an erasure.
      const optedOut = await optedOutPhones(
        trx,
        deps.personalDataKeys,
        accountId,
        rows.map((row) => row.phone),
      );
      const refused: Settled[] = [];
      const allowed: OutboxRow[] = [];
      const held: RowHold[] = [];
      for (const row of rows) {
        const reason = refusal(row, account, optedOut.has(row.phone), now, deps.maxQueueAgeMs);
        if (reason) refused.push({ row, report: reason });
        else if (registrationHoldOf(row, rule))
          held.push({
            messageId: row.message_id,
            reason: 'registration_pending',
            until: new Date(now.getTime() + deps.registrationRecheckMs),
          });
        else allowed.push(row);
      }
      const settled = await settleRefused(
        trx,
        refused.map(({ row, report }) => ({ messageId: row.message_id, report })),
        now,
      );
      // Held in the decision's transaction, and said (`message.held`) in its append: both or neither.
      const newlyHeld = await holdRows(trx, held, token, now);
      const byId = new Map(rows.map((row) => [row.message_id, row]));
      return {
        events: held
          .filter((hold) => newlyHeld.has(hold.messageId))
          .map((hold) => heldEvent(byId.get(hold.messageId)!, hold, null)),
        result: {
          from,
          window: (account?.sending_window ?? DEFAULT_SENDING_WINDOW) as SendingWindow,
          settings: accountPaceSettings(deps.pacing, {
            messages_per_second: account?.messages_per_second ?? null,
            daily_cap: account?.daily_cap ?? null,
          }),
          allowed,
          refused: refused.filter(({ row }) => settled.has(row.message_id)),
        },
      };
    },
  });
  return result;
}

/**
 * One send in the remote-call shape. Its mark also settles the send before (`owed`), so a backlog
 * costs one commit per message, and claims the number's slot (`slot.claim`); its own outcome is
 * returned as owed, for the next mark or the end. A slot claimed ahead is waited for after the mark, so
 * the call leaves at its slot, not a round trip after it; the mark's time on the gateway's clock is
 * returned (`markMs`) so the pass can claim the next slot that far ahead.
 */
async function send(
  { db, sender, clock, timers, ...deps }: PassDeps,
  row: OutboxRow,
  from: string,
  token: string,
  owed: OwedSettlement | undefined,
  slot: { at: Date; claim: PaceClaim | undefined },
) {
  let claim = 'taken' as 'sending' | 'taken' | 'opted_out' | 'pace_taken';
  let settledOwed = false;
  let paced = false;
  let markMs = 0;
  let calledAt: Date | undefined;
  let outcome: OwedSettlement | undefined;
  await runRemoteCall<OutboxRow, AcceptedSms>('SMS provider', deps.sendTimeoutMs, {
    async claim() {
      const now = clock.now();
      ({
        claim,
        settledPrevious: settledOwed,
        paced,
      } = await markSending(
        db,
        row.message_id,
        now,
        deps.leaseMs,
        token,
        owed,
        slot.claim && claimPaceStatement(slot.claim, now),
      ));
      markMs = clock.now().getTime() - now.getTime();
      if (claim !== 'sending') return undefined;
      // In flight now: it goes whatever happens (no signal), at most the claim-ahead time later.
      await waitOnClock(clock, timers, slot.at);
      return row;
    },
    call: () => {
      calledAt = clock.now();
      return sender.send({
        messageId: row.message_id,
        accountId: row.account_id,
        from,
        to: row.phone,
        body: row.body,
      });
    },
    async record(claimed, result) {
      const report = sendReport(claimed, result);
      if (report) outcome = { messageId: claimed.message_id, report };
      // Maybe accepted, maybe not (a timeout, a reset connection): never resend; reconcile() settles it.
      else if (!result.ok) deps.onError(result.error);
    },
  });
  return { claim, settledOwed, owed: outcome, paced, markMs, calledAt };
}

/**
 * Holds the rows pacing put off (their window closed, or the brand's cap), and says so: the events
 * first, so a crash between the two repeats a `message.held` rather than losing it.
 */
async function holdForPace(
  { db, commands, clock }: Pick<PassDeps, 'db' | 'commands' | 'clock'>,
  holds: readonly RowHold[],
  token: string,
) {
  if (holds.length === 0) return;
  const rows = await db
    .selectFrom('sms_outbox')
    .selectAll()
    .where(
      'message_id',
      'in',
      holds.map((hold) => hold.messageId),
    )
    .execute();
  const byId = new Map(rows.map((row) => [row.message_id, row]));
  // A row gone meanwhile (its lead erased) is neither held nor said to be. A row held again for the
  // same reason is said to be again when its time moved (past the cap on the next day too), so the
  // time its message shows is never one already gone by.
  const changed = holds.filter((hold) => {
    const row = byId.get(hold.messageId);
    return (
      row !== undefined &&
      (row.hold_reason !== hold.reason || row.held_until?.getTime() !== hold.until.getTime())
    );
  });
  if (changed.length > 0) {
    const first = byId.get(changed[0]!.messageId)!;
    await commands.append({
      stream: { topic: 'account', accountId: first.account_id },
      context: contextOf(first),
      events: changed.map((hold) => heldEvent(byId.get(hold.messageId)!, hold, hold.until)),
      readYourWrites: false,
    });
  }
  await holdRows(db, holds, token, clock.now());
}

/**
 * One account's pass, run by the worker for each claim:
 *   1. decide, in a short transaction on the account's decide-and-append path (its lock, read models
 *      caught up): a refused row (opted-out number except the compliance replies, deactivated account,
 *      a manual message that waited longer than `maxQueueAgeMs`) is settled failed and committed, and
 *      only then reported with `message.failed`;
 *   2. mark: the row is marked `sending` under the claim (committed), so it is never sent again, the
 *      number's opt-out is checked again right there, and the number's slot is claimed in the same
 *      statement (a compare-and-set), a mark's time ahead of the slot;
 *   3. call the provider at the slot, bounded by `sendTimeoutMs`, with nothing open in the database;
 *   4. record: the row is settled with the event that reports it (with the next row's mark, or at the
 *      end); the outcomes (the refusals of 1 included) are appended before each wait for a slot and at
 *      the end, in the rows' order: one append per account and wait or pass, with no lock and no wait
 *      for the projector.
 * A number whose next slot is near (`slotWaitMs`) is waited for, within the pass's hold
 * (`passHoldMs`) and while another account could start on a free worker: one claim and one decision
 * for the messages of many slots; otherwise the rest is handed back until the slot.
 * A decision covers at most `decisionBatch` rows; a number that opted out since is decided again (and
 * refused). Once `signal` aborts (the pass's time budget, or shutdown) nothing more is marked: the
 * worker has handed the rest of the claim back.
 */
export function accountPass(deps: PassDeps) {
  const { db, clock } = deps;

  /**
   * Every outcome is settled in the outbox before it is appended (a refusal in its decision's
   * transaction, a send with the next mark or at the end), so a crash before the append loses nothing:
   * reconciliation reports what was settled and not reported.
   */
  return async function pass({ rows, token }: AccountClaim, signal: AbortSignal): Promise<void> {
    const byId = new Map(rows.map((row) => [row.message_id, row]));
    const outcomes: Settled[] = [];
    const paceHolds: RowHold[] = [];
    /** Rows handed back because the number's next slot is later (at `until`), in order. */
    let waiting: { rows: readonly OutboxRow[]; until: Date | undefined } | undefined;
    let owed: OwedSettlement | undefined;
    const owedSettled = () => {
      if (owed) outcomes.push({ row: byId.get(owed.messageId)!, report: owed.report });
      owed = undefined;
    };
    let pace: ReturnType<typeof numberPace> | undefined;
    // The next slot counted from the last call is stored before another view of the pace is read.
    const storeCallPace = async () => {
      const update = pace?.owedUpdate();
      if (update) await claimPace(db, update, clock.now());
    };
    const holdEnd = clock.now().getTime() + deps.passHoldMs;
    /**
     * A pass keeps its account's claim and waits for the number's next slot only when it is near, the
     * pass is within its hold, another account could still start on a free worker, and the row would
     * not expire by its slot (a new decision refuses it then); otherwise its rows are handed back.
     */
    const mayWait = (row: OutboxRow, until: Date) =>
      until.getTime() - clock.now().getTime() <= deps.slotWaitMs &&
      until.getTime() <= holdEnd &&
      deps.othersCanStart() &&
      expiredBy(row, until, deps.maxQueueAgeMs) === undefined;
    /** How far ahead of its slot a row is claimed and marked: twice the last mark's time, on the clock. */
    let aheadMs = 0;
    /** Since when (gateway's clock) a wait has found outcomes not yet on the log, if one has. */
    let unreportedSince: number | undefined;
    /**
     * Before a wait for the number's next slot, what went out so far is settled and put on the log, so
     * a paced number's `message.sent` follows its send by about a second, not by the whole pass: before
     * a wait of half a second or more (a number at 2 a second or slower: each send), or once the oldest
     * outcome held is a second old (a fast number: a second's sends in one append). The send before
     * then settles on its own (without a wait there is none: a backlog keeps one commit a send).
     */
    const reportBeforeWait = async (until: Date) => {
      const now = clock.now().getTime();
      if (owed || outcomes.length > 0) unreportedSince ??= now;
      if (unreportedSince === undefined) return;
      if (until.getTime() - now < 500 && now - unreportedSince < 1000) return;
      if (owed && (await settleSending(db, owed.messageId, clock.now(), owed.report))) owedSettled();
      owed = undefined;
      unreportedSince = undefined;
      if (outcomes.length === 0) return;
      await report(deps, inRequestOrder(outcomes, rows));
      outcomes.length = 0;
    };
    try {
      let todo: readonly OutboxRow[] = rows;
      let redecided: string | undefined;
      while (todo.length > 0 && !signal.aborted) {
        const chunk = todo.slice(0, deps.decisionBatch);
        let next = todo.slice(chunk.length);
        // Nothing is settled when the decision fails (the log or the read models are unavailable): the
        // worker hands the claim back and the rows are tried again, in order; this account stops here.
        const decided = await decide(deps, chunk[0]!.account_id, chunk, token);
        outcomes.push(...decided.refused);
        await storeCallPace();
        pace = numberPace({ ...deps, accountId: chunk[0]!.account_id, ...decided });
        const maxAheadMs = decided.settings ? spacingMs(decided.settings) / 2 : 0;
        for (const row of decided.allowed) {
          if (signal.aborted) break;
          let plan = await pace.plan(row, aheadMs);
          while (plan.kind === 'wait' && mayWait(row, plan.until)) {
            await reportBeforeWait(plan.until);
            if (!(await waitOnClock(clock, deps.timers, new Date(plan.until.getTime() - aheadMs), signal)))
              break;
            plan = await pace.plan(row, aheadMs);
          }
          if (signal.aborted) break;
          if (plan.kind === 'hold') {
            paceHolds.push({ messageId: row.message_id, reason: plan.reason, until: plan.until });
            continue;
          }
          if (plan.kind === 'wait') {
            // The number is busy until its next slot: this row and the rest wait for it, in order,
            // without holding a worker (the queue's next due time wakes the loop then).
            waiting = { rows: todo.slice(todo.indexOf(row)), until: plan.until };
            next = [];
            break;
          }
          const result = await send(deps, row, decided.from, token, owed, plan);
          if (result.settledOwed) owedSettled();
          owed = result.owed;
          if (result.paced) pace.claimed(plan.claim!);
          if (result.calledAt) pace.called(result.calledAt);
          aheadMs = Math.min(maxAheadMs, 2 * result.markMs);
          if (result.claim === 'pace_taken') {
            // Another pass claimed the number's slot meanwhile: hand the rows back, the next claim reads it.
            waiting = { rows: todo.slice(todo.indexOf(row)), until: undefined };
            next = [];
            break;
          }
          if (result.claim === 'opted_out') {
            // An opt-out arrived while this pass went out: decide again from this row on (once; a row
            // still refused by the mark then waits for its lease to run out, with the rest behind it).
            next = row.message_id === redecided ? [] : todo.slice(todo.indexOf(row));
            redecided = row.message_id;
            break;
          }
        }
        todo = next;
      }
    } finally {
      // The last outcome is settled on its own; what was settled is reported even if a later send of
      // the pass failed to record.
      if (owed && (await settleSending(db, owed.messageId, clock.now(), owed.report))) owedSettled();
      await storeCallPace().catch(deps.onError);
      await report(deps, inRequestOrder(outcomes, rows));
      await holdForPace(deps, paceHolds, token);
      if (waiting)
        await releaseClaim(
          db,
          waiting.rows.map((row) => row.message_id),
          token,
          waiting.until,
        );
    }
  };
}
