import type { Clock, FairnessPolicy, RetryPolicy, WorkQueue } from '@leadline/runtime';
import { ModelFailure, processTurn, recordTurn, turnKeysOf, type TurnDeps } from './process-turn';
import {
  burstsOf,
  leaseDueTurns,
  leaseMsFor,
  measureTurns,
  nextTurnDue,
  releaseTurns,
  turnDueAt,
  type ClaimedTurn,
} from './turns';

/**
 * A failing model is tried again after a backoff from `retryBaseMs`, doubling to a minute, with full
 * jitter (conversations that failed together do not all come back at once), for `unavailableAfterMs`
 * from its first failure; then the turn is handed off (`ai_unavailable`).
 */
export const turnRetry = (retryBaseMs: number, unavailableAfterMs: number): RetryPolicy => ({
  backoff: { kind: 'exponential', baseMs: retryBaseMs, maxMs: 60_000 },
  jitter: 'full',
  maxAttempts: Number.POSITIVE_INFINITY,
  giveUpAfterMs: unavailableAfterMs,
  retryable: 'all',
});

/**
 * One account's turns hold at most a quarter of the slots: one tenant's slow or stuck turns (a model
 * that hangs on its conversations, a flood of bursts) never take every slot from the others.
 */
export const turnFairness = (concurrency: number): FairnessPolicy<ClaimedTurn> => ({
  keyOf: ({ turn }) => turn.account_id,
  perKey: Math.max(1, Math.floor(concurrency / 4)),
});

/**
 * The pending turns as the worker's queue: claims lease due turns with their bursts; a model failure is
 * settled by the retry policy in the turn's own columns (attempts, first failure, next due time), and
 * any other failure hands the turn back without counting it.
 */
export function turnsQueue(
  deps: TurnDeps & { clock: Clock; retryBaseMs: number; budgetMs: number; concurrency: number },
): WorkQueue<ClaimedTurn> {
  const { db, clock, retryBaseMs, onError } = deps;
  const leaseMs = leaseMsFor(deps.budgetMs);
  const { perKey: perAccount } = turnFairness(deps.concurrency);
  const later = () => new Date(clock.now().getTime() + retryBaseMs);
  return {
    name: 'ai_turns',
    async claim({ limit, held }) {
      const turns = await leaseDueTurns(db, clock.now(), { limit, leaseMs, perAccount, held });
      return burstsOf(db, turns).catch(async (error: unknown) => {
        // Not processed: the leases end soon, as a failed turn's do, rather than with their lease.
        onError(error);
        await releaseTurns(
          db,
          turns.map((turn) => turn.id),
          later(),
        );
        return [];
      });
    },
    run: (claimed, signal) => processTurn(deps, claimed, signal),
    history: ({ turn }) => ({ retriesDone: turn.attempts, firstFailureAt: turn.first_failure_at }),
    async settle(claimed, settlement) {
      if (settlement.kind === 'done') return;
      const { turn } = claimed;
      onError(settlement.error);
      if (!(settlement.error instanceof ModelFailure)) {
        await releaseTurns(db, [turn.id], settlement.kind === 'retry' ? settlement.at : later());
      } else if (settlement.kind === 'retry') {
        await turnDueAt(db, turn, settlement.at, { firstFailureAt: turn.first_failure_at ?? clock.now() });
      } else {
        // The model failed for `unavailableAfterMs`: a person takes over.
        await recordTurn(deps, claimed, { ...turnKeysOf(claimed), proposal: null, unavailable: true });
      }
    },
    async release(items, until) {
      await releaseTurns(
        db,
        items.map(({ turn }) => turn.id),
        until ?? null,
      );
    },
    leaseEndOf: ({ turn }) => turn.lease_until!,
    nextDue: () => nextTurnDue(db),
    measure: () => measureTurns(db, clock.now()),
  };
}
