import { aiTurnStates, loadAiAccount } from '@leadline/decision-state';
import { awaitsOptOutDecision, skipReason, stepHeldForConsent } from '@leadline/domain';
import { ai, type TopicNames } from '@leadline/events';
import { timeStage, type PersonalDataKeys, type ProjectionProgress } from '@leadline/runtime';
import type { Recorded, Recording } from './record';
import type { Responder, TurnProposal } from './turn';
import { buildInput, burstProjected, type TurnInputDeps } from './turn-input';
import { finishTurn, releaseTurns, turnDueAt, type ClaimedTurn } from './turns';

/** How often a sequence step waiting for an answered STOP's decision looks again. */
const OPT_OUT_DECISION_POLL_MS = 1_000;

/** The model (or the offline responder) failed: the turn is tried again, and handed off past a bound. */
export class ModelFailure extends Error {
  override name = 'ModelFailure';
  constructor(override readonly cause: unknown) {
    super(`The model failed: ${(cause as Error)?.message ?? String(cause)}`);
  }
}

export interface TurnDeps extends TurnInputDeps {
  progress: ProjectionProgress;
  topics: TopicNames;
  responder: Responder;
  /** Bound on one model turn (all its tool rounds). */
  modelTimeoutMs: number;
  maxMessagesPerLeadPerDay: number;
  /** The keyed hash of a number, which finds an opt-out kept past its person's erasure. */
  personalDataKeys: Pick<PersonalDataKeys, 'subjectOf'>;
  record: (recording: Recording) => Promise<Recorded>;
  /** A turn is due now (the next burst, or a turn decided too early): the worker looks again. */
  turnsQueued: () => void;
}

/** Asks the responder, within the model's own bound and the item's budget (`signal`), whichever ends first. */
async function callResponder(
  deps: TurnDeps,
  input: Parameters<Responder['respond']>[0],
  signal: AbortSignal,
): Promise<TurnProposal> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error('The model took too long')), deps.modelTimeoutMs);
  const stop = () => controller.abort(signal.reason);
  signal.addEventListener('abort', stop, { once: true });
  try {
    return await deps.responder.respond(input, controller.signal);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', stop);
  }
}

/** The messages a turn answers, and the keys that tell whether it was handled already. */
export function turnKeysOf({ turn, messages }: ClaimedTurn) {
  const messageIds = messages.map((message) => message.message_id);
  const keys = ai.turnKeys({
    message_ids: messageIds,
    sequence_step: turn.step && { enrollment_id: turn.step.enrollment_id, step_order: turn.step.step_order },
  });
  return { messageIds, keys };
}

async function finish(deps: TurnDeps, { turn }: ClaimedTurn, messageIds: readonly string[]) {
  if (await timeStage('ai_finish', () => finishTurn(deps.db, turn, messageIds))) deps.turnsQueued();
}

/**
 * Records a turn's outcome under its account's lock, then takes it out of the queue: or due again when
 * its step was held by the sending window (the hold is on the log), or at once when it was decided too
 * early (the read models were behind the burst).
 */
export async function recordTurn(deps: TurnDeps, claimed: ClaimedTurn, recording: Omit<Recording, 'turn'>) {
  const { turn } = claimed;
  const recorded = await timeStage('ai_record', () => deps.record({ ...recording, turn }));
  if (recorded.heldUntil) await turnDueAt(deps.db, turn, recorded.heldUntil);
  else if (recorded.recorded) await finish(deps, claimed, recording.messageIds);
  else {
    await releaseTurns(deps.db, [turn.id], null);
    deps.turnsQueued();
  }
}

/**
 * One turn: a pre-check against the read models (already handled, paused, capped, opted out, held by
 * the window or for consent: no model call), the model (outside any transaction or lock), then the
 * decision under the account's lock (`recordTurn`). A model failure is thrown as `ModelFailure` for the
 * worker's retry policy; anything else the worker hands back.
 */
export async function processTurn(deps: TurnDeps, claimed: ClaimedTurn, signal: AbortSignal) {
  const { db, clock } = deps;
  const { turn, messages } = claimed;
  const { messageIds, keys } = turnKeysOf(claimed);
  if (turn.kind === 'inbound' && messages.length === 0) return finish(deps, claimed, []);

  // The account's row (its status and settings) does not come from the burst: read while waiting.
  const [account] = await Promise.all([loadAiAccount(db, turn.account_id), burstProjected(deps, messages)]);
  if (!account) return finish(deps, claimed, messageIds);
  // The model's input is read beside the pre-check (both only read), so a turn that goes ahead does not
  // wait for one and then the other. Not with media: downloading and storing them waits for the
  // pre-check to let the turn go ahead.
  const early = messages.every((message) => message.media.length === 0)
    ? timeStage('ai_build_input', () => buildInput(deps, turn, account, messages))
    : undefined;
  // Settled here if the turn stops at the pre-check; awaited (and its error handled) below otherwise.
  early?.catch(() => undefined);
  const request = { phone: turn.phone, step: turn.step, keys, withChecklist: false };
  const [state] = await timeStage('ai_load_state', () =>
    aiTurnStates(db, deps.personalDataKeys, account, [request], clock.now()),
  );
  if (state!.handled) return finish(deps, claimed, messageIds);
  const checked = {
    sequence_step: turn.step && { ...turn.step, phone: turn.phone },
    maxMessagesPerDay: deps.maxMessagesPerLeadPerDay,
  };
  if (awaitsOptOutDecision(checked, state!)) {
    return turnDueAt(db, turn, new Date(clock.now().getTime() + OPT_OUT_DECISION_POLL_MS));
  }
  let proposal: TurnProposal | null = null;
  // A step held by the sending window is not written until it opens, nor one without consent.
  if (!skipReason(checked, state!) && !state!.stepHold && !stepHeldForConsent(checked, state!)) {
    const input = await (early ??
      timeStage('ai_build_input', () => buildInput(deps, turn, account, messages)));
    try {
      proposal = await timeStage('ai_model', () => callResponder(deps, input, signal));
    } catch (error) {
      // Past its budget (or stopping) the worker has handed the turn back already.
      if (signal.aborted) throw error;
      throw new ModelFailure(error);
    }
  }
  await recordTurn(deps, claimed, { messageIds, keys, proposal, unavailable: false });
}
