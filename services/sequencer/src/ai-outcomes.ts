import { stepState } from '@leadline/decision-state';
import { decideAiStepOutcome } from '@leadline/domain';
import type { DomainEvent } from '@leadline/events';
import type { Clock, CommandBus, CommandContext, PersonalDataKeys } from '@leadline/runtime';

export const SERVICE = 'sequencer';

export const contextOf = (
  partnerId: string,
  correlationId: string,
  causationId: string | null,
): CommandContext => ({
  partnerId,
  actor: { kind: 'system', service: SERVICE },
  correlationId,
  causationId,
});

type Outcome = Parameters<typeof decideAiStepOutcome>[2];

/**
 * The AI agent's answer to an AI step a batch holds, if `event` is one: the message it requested (a
 * `message.outbound_requested` carrying the step, written by the agent, not by the sequencer) or
 * `sequence.ai_step_failed`. `done` holds the messages a fixed step's `sequence.step_sent` already
 * accounts for.
 */
export function aiOutcomeOf(
  event: DomainEvent,
  done: ReadonlySet<string>,
): { enrollment_id: string; step_order: number; outcome: Outcome } | undefined {
  const ownMessage = event.actor.kind === 'system' && event.actor.service === SERVICE;
  if (
    event.type === 'message.outbound_requested' &&
    event.data.sequence_step &&
    !ownMessage &&
    !done.has(event.data.message_id)
  ) {
    const { enrollment_id, step_order } = event.data.sequence_step;
    return { enrollment_id, step_order, outcome: { kind: 'sent', message_id: event.data.message_id } };
  }
  if (event.type === 'sequence.ai_step_failed') {
    const { enrollment_id, step_order } = event.data;
    return { enrollment_id, step_order, outcome: { kind: 'failed' } };
  }
  return undefined;
}

/** The AI agent's answers in a batch of the log, in log order; each is decided under the account's lock. */
export async function decideAiOutcomes(
  deps: {
    commands: CommandBus;
    personalDataKeys: Pick<PersonalDataKeys, 'subjectOf'>;
    clock: Clock;
    hourSeconds: number;
  },
  events: readonly DomainEvent[],
) {
  const { commands, clock, hourSeconds } = deps;
  // A fixed step's message is appended with its `sequence.step_sent`: that step is done already.
  const done = new Set(
    events.flatMap((event) => (event.type === 'sequence.step_sent' ? [event.data.message_id] : [])),
  );
  for (const event of events) {
    const answer = aiOutcomeOf(event, done);
    if (!answer || event.account_id === null) continue;
    await commands.execute({
      stream: { topic: 'account', accountId: event.account_id },
      context: contextOf(event.partner_id, event.correlation_id, event.id),
      lockKeys: [`account:${event.account_id}`],
      consistency: 'partition',
      async decide(trx) {
        const now = clock.now();
        const state = await stepState(trx, deps.personalDataKeys, answer.enrollment_id, now);
        const decided = state
          ? decideAiStepOutcome(state, answer.step_order, answer.outcome, { now, hourSeconds })
          : [];
        return { events: decided, result: undefined };
      },
    });
  }
}
