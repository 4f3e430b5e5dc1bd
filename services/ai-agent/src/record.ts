import { aiTurnStates, loadAiAccount } from '@leadline/decision-state';
import { decideAiTurn, type AiTurn } from '@leadline/domain';
import {
  createKeyedBatcher,
  type Clock,
  type CommandBus,
  type EventToAppend,
  type NewId,
  type PersonalDataKeys,
} from '@leadline/runtime';
import type { TurnProposal } from './turn';
import type { TurnRow } from './turns';

/** The most turns of one account recorded in one command. */
const RECORD_BATCH_MAX = 100;

/** What recording one turn decides with. */
export interface Recording {
  turn: TurnRow;
  messageIds: string[];
  keys: string[];
  proposal: TurnProposal | null;
  /** The model failed for longer than the agent retries it: the turn is handed off. */
  unavailable: boolean;
}

/**
 * `recorded` is false when there was nothing to decide yet: the pre-check read read models that had
 * not caught up, so the model was not asked when it should be. `heldUntil` is set when a sequence
 * step's message was held by the sending window.
 */
export type Recorded = { recorded: boolean; heldUntil: Date | null };

export interface RecorderDeps {
  commands: CommandBus;
  clock: Clock;
  newId: NewId;
  /** `model` or `offline`, recorded on `ai.turn_completed`. */
  responderName: string;
  maxMessagesPerLeadPerDay: number;
  /** The keyed hash of a number, which finds an opt-out kept past its person's erasure. */
  personalDataKeys: Pick<PersonalDataKeys, 'subjectOf'>;
}

/**
 * Records a turn: it joins the next command of its account, which starts as soon as the account's
 * current one ends (group commit, as the command bus does with appends), under the account's lock: one
 * wait for the read models, one append. Each turn is decided on its own, against its own conversation's
 * state (every event a turn produces is about its own number), and its events keep its own correlation
 * and causation ids, as recorded alone; two turns of one number (its reply and a sequence step) never
 * share a command.
 */
export function createRecorder(deps: RecorderDeps): (recording: Recording) => Promise<Recorded> {
  const { commands, clock, newId } = deps;

  async function recordTogether(accountId: string, recordings: Recording[]): Promise<Recorded[]> {
    const first = recordings[0]!.turn;
    const { result } = await commands.execute({
      stream: { topic: 'account', accountId },
      context: {
        partnerId: first.partner_id,
        actor: { kind: 'system', service: 'ai-agent' },
        correlationId: first.correlation_id ?? first.id,
        causationId: first.causation_id,
      },
      lockKeys: [`account:${accountId}`],
      consistency: 'partition',
      // The next decision about this account waits for the projector under the lock anyway.
      readYourWrites: false,
      decide: async (trx) => {
        const account = await loadAiAccount(trx, accountId);
        // The account is gone: nothing to decide, nothing to retry.
        if (!account)
          return { events: [], result: recordings.map(() => ({ recorded: true, heldUntil: null })) };
        const now = clock.now();
        const states = await aiTurnStates(
          trx,
          deps.personalDataKeys,
          account,
          recordings.map(({ turn, keys, proposal }) => ({
            phone: turn.phone,
            step: turn.step,
            keys,
            withChecklist: (proposal?.collected.length ?? 0) > 0,
          })),
          now,
        );
        const events: EventToAppend[] = [];
        const results: Recorded[] = [];
        for (const [index, { turn, messageIds, proposal, unavailable }] of recordings.entries()) {
          const state = states[index]!;
          const aiTurn: AiTurn = {
            phone: turn.phone,
            message_ids: messageIds,
            sequence_step: turn.step && { ...turn.step, phone: turn.phone },
            proposal,
            unavailable,
            reply_message_id: newId(),
            responder: deps.responderName,
            maxMessagesPerDay: deps.maxMessagesPerLeadPerDay,
          };
          const decided = decideAiTurn(aiTurn, state, now);
          const held = decided.find((event) => event.type === 'sequence.step_held');
          const ids = { correlationId: turn.correlation_id ?? turn.id, causationId: turn.causation_id };
          events.push(...decided.map((event) => ({ ...event, ...ids })));
          results.push({
            recorded: decided.length > 0 || state.handled,
            heldUntil: held?.type === 'sequence.step_held' ? new Date(held.data.next_step_at) : null,
          });
        }
        return { events, result: results };
      },
    });
    return result;
  }

  return createKeyedBatcher<Recording, Recorded>({
    keyOf: (recording) => recording.turn.account_id,
    conflicts: (a, b) => a.turn.phone === b.turn.phone,
    maxBatch: RECORD_BATCH_MAX,
    run: recordTogether,
  });
}
