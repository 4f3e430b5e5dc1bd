import type { SendingWindow } from '@leadline/domain';
import type { Clock, Database } from '@leadline/runtime';
import type { Kysely } from 'kysely';
import type { OutboxRow } from './outbox';
import { readPace, type PaceClaim } from './pace-store';
import { afterCall, paceDecision, type HoldReason, type PaceSettings, type PaceState } from './pacing';
import { isComplianceReply } from './send-policy';

export type PacePlan =
  /** It may leave at `at` once its slot (`claim`, none when the number is not paced) is claimed with its mark. */
  | { kind: 'send'; at: Date; claim: PaceClaim | undefined }
  | { kind: 'hold'; reason: HoldReason; until: Date }
  | { kind: 'wait'; until: Date };

/**
 * One pass's view of its number's pace: read once, decided by `paceDecision` for each row, and each
 * slot claimed in Postgres with the row's mark (so gateways together never exceed the number's rate;
 * the account's claim keeps other passes off it, the compare-and-set makes sure). Without settings the
 * number is not paced (each row still waits for its sending window), and no pace is stored.
 *
 * Two views of the pace: `stored`, what Postgres holds (the compare-and-set's expectation), and
 * `effective`, which also counts from the last provider call (see afterCall); the next slot is decided
 * from the effective one.
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
  let stored: PaceState | undefined;
  let effective: PaceState | undefined;
  let read = false;
  return {
    /** What becomes of `row` now; a slot within `aheadMs` is claimed now and waited for after the mark. */
    async plan(row: OutboxRow, aheadMs = 0): Promise<PacePlan> {
      if (deps.settings && !read) {
        stored = effective = await readPace(deps.db, deps.from);
        read = true;
      }
      const decision = paceDecision({
        now: deps.clock.now(),
        settings: deps.settings ?? unpaced,
        pace: effective,
        message: { phone: row.phone, proactive: row.proactive, compliance: isComplianceReply(row) },
        window: deps.window,
        aheadMs: deps.settings ? aheadMs : 0,
      });
      if (decision.kind !== 'send') return decision;
      const claim = deps.settings && {
        phoneNumber: deps.from,
        accountId: deps.accountId,
        read: stored,
        next: decision.pace,
      };
      return { kind: 'send', at: decision.at, claim };
    },
    /** The mark claimed this slot: it is the number's pace now. */
    claimed(claim: PaceClaim) {
      stored = effective = claim.next;
    },
    /** The provider was called at `calledAt`: the next slot is a spacing after it at the earliest. */
    called(calledAt: Date) {
      if (deps.settings && effective) effective = afterCall(effective, calledAt, deps.settings);
    },
    /**
     * When the pass ends: the next slot as counted from its last call, if that is later than the one
     * stored, so the next pass (of any gateway) counts from the call too. Null when nothing is owed.
     */
    owedUpdate(): PaceClaim | undefined {
      if (!effective || !stored || effective.nextSendAt.getTime() <= stored.nextSendAt.getTime())
        return undefined;
      return { phoneNumber: deps.from, accountId: deps.accountId, read: stored, next: effective };
    },
  };
}
