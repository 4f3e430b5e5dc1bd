import type { SendingWindow } from '@leadline/domain';
import type { Clock, Database } from '@leadline/runtime';
import type { Kysely } from 'kysely';
import { claimPace, readPace, type OutboxRow } from './outbox';
import { paceDecision, type HoldReason, type PaceSettings, type PaceState } from './pacing';
import { isComplianceReply } from './send-policy';

export type PaceVerdict =
  | { kind: 'send' }
  | { kind: 'hold'; reason: HoldReason; until: Date }
  | { kind: 'wait'; until: Date }
  /** Another pass claimed the number's slot meanwhile: hand the rows back and let the next claim read it. */
  | { kind: 'taken' };

/**
 * One pass's view of its number's pace: read once, decided by `paceDecision` for each row, and each
 * slot claimed in Postgres before the row is marked in flight (so gateways together never exceed the
 * number's rate; the account's claim keeps other passes off it, the compare-and-set makes sure).
 * Without settings the number is not paced (each row still waits for its sending window), and no pace
 * is stored.
 */
export function numberPace(deps: {
  db: Kysely<Database>;
  clock: Clock;
  settings: PaceSettings | undefined;
  accountId: string;
  from: string;
  window: SendingWindow;
}) {
  const unpaced: PaceSettings = { messagesPerSecond: Number.POSITIVE_INFINITY, brandDailyCap: null };
  let pace: PaceState | undefined;
  let read = false;
  return {
    async verdict(row: OutboxRow): Promise<PaceVerdict> {
      if (deps.settings && !read) {
        pace = await readPace(deps.db, deps.from);
        read = true;
      }
      const now = deps.clock.now();
      const decision = paceDecision({
        now,
        settings: deps.settings ?? unpaced,
        pace,
        message: { phone: row.phone, proactive: row.proactive, compliance: isComplianceReply(row) },
        window: deps.window,
      });
      if (decision.kind !== 'send') return decision;
      if (!deps.settings) return { kind: 'send' };
      if (!(await claimPace(deps.db, deps.from, deps.accountId, pace, decision.pace, now)))
        return { kind: 'taken' };
      pace = decision.pace;
      return { kind: 'send' };
    },
  };
}
