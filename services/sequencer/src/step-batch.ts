import { decideDueStep, evolveStepState, inAppendOrder, type StepState } from '@leadline/domain';
import type { NewEvent } from '@leadline/events';
import type { DueStep } from './claims';

/**
 * What one append of decided steps may hold, well under what one command may append
 * (`APPEND_MAX_BYTES`): steps are decided until their events pass this, so a claim of 1,000 short
 * steps is one append, and the longest messages and AI instructions go fewer to an append (the rest
 * in the next command on the account).
 */
export const APPEND_BUDGET_BYTES = 4 * 1024 * 1024;
/** An event's envelope (ids, actor, times, headers) beside its data, rounded up. */
const ENVELOPE_BYTES = 500;

/** One step's events, traced to its own enrollment (one append carries many enrollments' steps). */
export type StepEvent = NewEvent & { correlationId: string; causationId: null };

export interface StepBatch {
  /** Every decided step's events, in the order projections apply fastest (see `inAppendOrder`). */
  events: StepEvent[];
  /** Steps held to a later time: their leases go, so they are claimed as soon as they are due. */
  release: DueStep[];
  /** Steps past the append's size budget: the next command on the account decides them. */
  undecided: DueStep[];
}

const heldStep = (stepOrder: number) => (event: NewEvent) =>
  (event.type === 'sequence.step_held' || event.type === 'sequence.step_held_for_consent') &&
  event.data.step_order === stepOrder;

/**
 * Decides one account's claimed steps in claim order, each on its own rules (opt-out, the window and
 * the lead's state's rules, consent, the enrollment still active, the lead still there). The read
 * models do not see the batch's own events, so after each step the states of its number evolve by
 * what it decided (a lead in two sequences is started and contacted once, and its state's daily cap
 * counts the first step). Pure: the states are loaded, and the ids and time given.
 */
export function decideStepBatch(
  steps: readonly DueStep[],
  loaded: ReadonlyMap<string, StepState>,
  context: { now: Date; hourSeconds: number; newId: () => string; budgetBytes?: number },
): StepBatch {
  const { now, hourSeconds, newId } = context;
  const budget = context.budgetBytes ?? APPEND_BUDGET_BYTES;
  const states = new Map(loaded);
  const enrollmentsOf = Map.groupBy(states.keys(), (id) => states.get(id)!.enrollment!.phone);
  const events: StepEvent[] = [];
  const release: DueStep[] = [];
  let bytes = 0;
  for (const [index, step] of steps.entries()) {
    if (bytes > budget) return { events: inAppendOrder(events), release, undecided: steps.slice(index) };
    const state = states.get(step.enrollment_id);
    if (!state) continue;
    const decided = decideDueStep(state, step.step_order, { now, hourSeconds, messageId: newId() });
    if (decided.length === 0) {
      // Claimed again before its hold for consent was projected: nothing new to decide, and no lease to
      // keep either (claims pass over it once the hold is projected, until consent lifts it).
      if (state.enrollment?.hold_reason === 'no_consent') release.push(step);
      continue;
    }
    for (const id of enrollmentsOf.get(state.enrollment!.phone)!) {
      states.set(
        id,
        decided.reduce((next, event) => evolveStepState(next, event, now), states.get(id)!),
      );
    }
    if (decided.some(heldStep(step.step_order))) release.push(step);
    events.push(
      ...decided.map((event) => ({ ...event, correlationId: step.enrollment_id, causationId: null })),
    );
    for (const event of decided) bytes += ENVELOPE_BYTES + Buffer.byteLength(JSON.stringify(event.data));
  }
  return { events: inAppendOrder(events), release, undecided: [] };
}
