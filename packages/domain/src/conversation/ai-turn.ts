import { leadName, type EventData, type NewEvent } from '@leadline/events';
import { checklistProgress } from '../lead/checklist';
import { heldForConsent, type ConsentState } from '../consent/decide';
import { consentHeldEvent, heldEvent } from '../sequence/decide';
import type { Hold } from '../sequence/sending-window';
import { complianceReply, decideSendMessage, optedOutEvent, type ConversationState } from './decide';
import type { TurnProposal } from './turn';

export interface AiTurnState extends ConversationState {
  /** Whether any of the turn's keys (its inbound messages, or its step) was handled already. */
  handled: boolean;
  aiPaused: boolean;
  /** AI messages to this phone in the last 24 hours. */
  aiMessagesToday: number;
  requirements: {
    id: string;
    name: string;
    type: EventData<'requirement.created'>['type'];
    required: boolean;
  }[];
  /** Requirement ids already collected for the lead. */
  collected: ReadonlySet<string>;
  /**
   * For a sequence step: why its message may not go out now (the lead's sending window, its state's
   * rules), read at the instant of sending; null when it may.
   */
  stepHold: Hold | null;
  /**
   * For a sequence step: whether its enrollment is still active and waiting at that step (false once
   * the lead was unenrolled, opted out, deleted, or the sequence ended or moved on); null otherwise.
   */
  stepEnrollmentActive: boolean | null;
  /** The account's consent rule and the number's consent: a step's message may need a grant. */
  consent: ConsentState;
}

export interface AiTurn {
  phone: string;
  message_ids: string[];
  sequence_step: EventData<'sequence.ai_step_requested'> | null;
  /** What the responder proposed; null when the turn is decided without it (a skip or an outage). */
  proposal: TurnProposal | null;
  /** Set when the model stayed unavailable past its bound. */
  unavailable: boolean;
  reply_message_id: string;
  responder: string;
  maxMessagesPerDay: number;
}

/** Why the AI must stay quiet now, if it must: checked before calling the model and again under the lock. */
export function skipReason(
  turn: Pick<AiTurn, 'sequence_step' | 'maxMessagesPerDay'>,
  state: AiTurnState,
): string | null {
  if (state.account.status === 'deactivated') return 'account_deactivated';
  if (turn.sequence_step && state.stepEnrollmentActive === false) return 'enrollment_ended';
  if (!state.lead && !state.conversation) return 'lead_not_found';
  if (state.conversation?.opted_out || state.optOutPending) return 'lead_opted_out';
  if (state.aiPaused) return 'ai_paused';
  if (state.conversation?.needs_handoff) return 'needs_handoff';
  if (state.aiMessagesToday >= turn.maxMessagesPerDay) return 'daily_cap';
  return null;
}

/**
 * Whether a sequence step, kept quiet by an opt-out, waits rather than fails: the lead's STOP is
 * answered to Twilio but not yet decided. Its decision ends the enrollment as `opted_out`; failing the
 * step now would move the enrollment on first (to its next step, or `completed`). A guard that goes
 * without a decision (another account owned the message) lets the step go ahead.
 */
export function awaitsOptOutDecision(
  turn: Pick<AiTurn, 'sequence_step' | 'maxMessagesPerDay'>,
  state: AiTurnState,
): boolean {
  return (
    turn.sequence_step !== null &&
    !state.conversation?.opted_out &&
    skipReason(turn, state) === 'lead_opted_out'
  );
}

/**
 * Whether a sequence step's message waits for consent: an AI step is proactive, so an account that
 * requires consent holds it for a number without one. Replies to the lead's own messages never wait.
 */
export function stepHeldForConsent(turn: Pick<AiTurn, 'sequence_step'>, state: AiTurnState): boolean {
  return turn.sequence_step !== null && heldForConsent(state.consent);
}

/**
 * The AI turn, decided under the account's lock against caught-up read models: a turn already handled
 * writes nothing (redelivery, restart, a second agent); otherwise exactly one `ai.turn_completed`,
 * with the reply going through the same send decider as every other outbound message. A turn whose
 * model recorded an opt-out (`record_opt_out`) records it, as `lead.opted_out` with method `ai` and
 * one confirmation, unless the number is opted out already or its STOP is being decided (a skip, as for
 * any turn to an opted-out number), so a lead gets one confirmation however many ways it asked.
 */
export function decideAiTurn(turn: AiTurn, state: AiTurnState, now: Date): NewEvent[] {
  if (state.handled) return [];
  const { phone } = turn;
  const step = turn.sequence_step;
  const lead = state.lead;
  const leadRef = { phone, lead_id: lead?.lead_id ?? null, lead_name: leadName(lead) };
  const events: NewEvent[] = [];
  const completed = (
    outcome: EventData<'ai.turn_completed'>['outcome'],
    reason: string | null,
    replied: boolean,
  ) =>
    events.push({
      type: 'ai.turn_completed',
      data: {
        phone,
        message_ids: turn.message_ids,
        sequence_step: step && {
          enrollment_id: step.enrollment_id,
          sequence_id: step.sequence_id,
          step_order: step.step_order,
        },
        outcome,
        reason,
        reply_message_id: replied ? turn.reply_message_id : null,
        summary: turn.proposal?.summary ?? null,
        responder: turn.responder,
      },
    });
  const stepFailed = (reason: string) => {
    if (step) {
      events.push({
        type: 'sequence.ai_step_failed',
        data: {
          enrollment_id: step.enrollment_id,
          sequence_id: step.sequence_id,
          step_order: step.step_order,
          phone,
          reason,
        },
      });
    }
  };

  if (awaitsOptOutDecision(turn, state)) return [];
  const skip = skipReason(turn, state);
  if (skip) {
    // An ended enrollment waits for nothing: the sequencer would ignore a failure of its step.
    if (skip !== 'enrollment_ended') stepFailed(skip);
    completed('skipped', skip, false);
    return events;
  }
  // Without consent the step goes back to the sequencer, held until a grant; it is asked of the AI afresh
  // then, so no turn is completed for it now.
  if (step && lead && stepHeldForConsent(turn, state)) {
    const { instructions: _instructions, ...held } = { ...step, lead_id: lead.lead_id, phone };
    return [consentHeldEvent(held, 'ai_send', now)];
  }
  // A step's message is proactive: written earlier, it goes out only if the window is open now. Held, it
  // is written afresh when the window opens (the conversation may have moved on meanwhile).
  if (step && state.stepHold && lead) {
    const ref = { ...step, lead_id: lead.lead_id, phone };
    const { instructions: _instructions, ...held } = ref;
    return [heldEvent(held, 'ai_send', state.stepHold)];
  }
  // Skipped by a pre-check that read read models not yet caught up: nothing to decide without the model.
  if (!turn.unavailable && !turn.proposal) return [];
  if (turn.unavailable || !turn.proposal) {
    if (step) stepFailed('ai_unavailable');
    else
      events.push({ type: 'conversation.handoff_requested', data: { ...leadRef, reason: 'ai_unavailable' } });
    completed(step ? 'skipped' : 'handoff', 'ai_unavailable', false);
    return events;
  }
  const { proposal } = turn;

  // The model judged the lead's words a revocation: recorded as a STOP is (one confirmation, the
  // enrollments stopped), and nothing else of the turn goes out: no reply, no collected item, no
  // handoff. Only in answer to the lead's messages: a sequence step has no revoking message to name.
  const revoking = turn.message_ids.at(-1);
  if (proposal.optOut !== null && !step && revoking !== undefined) {
    events.push(
      optedOutEvent(leadRef, { method: 'ai', keyword: 'AI', message_id: revoking, reason: proposal.optOut }),
      complianceReply('opt_out', phone, state.account.company_name, turn.reply_message_id),
    );
    completed('silent', 'opted_out', false);
    return events;
  }

  const reply = proposal.reply?.trim() || null;
  if (reply) {
    events.push(
      ...decideSendMessage(
        {
          type: 'SendMessage',
          message_id: turn.reply_message_id,
          phone,
          body: reply,
          source: step ? 'sequence' : 'ai',
          sender_name: null,
          ...(step && {
            sequence_step: {
              enrollment_id: step.enrollment_id,
              sequence_id: step.sequence_id,
              step_order: step.step_order,
            },
          }),
        },
        state,
        now,
      ),
    );
  } else {
    stepFailed('empty_reply');
  }

  if (lead) events.push(...checklistEvents(lead, state, turn, proposal.collected, reply !== null));

  if (proposal.handoff && !state.conversation?.needs_handoff) {
    events.push({ type: 'conversation.handoff_requested', data: { ...leadRef, reason: proposal.handoff } });
  }
  completed(proposal.handoff ? 'handoff' : reply ? 'replied' : 'silent', proposal.handoff, reply !== null);
  return events;
}

/**
 * What the model collected, as checklist events: each item still on the checklist (one deleted while the
 * model was thinking is not collected) with the progress it makes, then `checklist.completed` and the
 * lead `qualified` when this turn completes the checklist.
 */
function checklistEvents(
  lead: NonNullable<AiTurnState['lead']>,
  state: AiTurnState,
  turn: AiTurn,
  collectedItems: NonNullable<AiTurn['proposal']>['collected'],
  replied: boolean,
): NewEvent[] {
  const { phone } = turn;
  const events: NewEvent[] = [];
  const requirements = new Map(state.requirements.map((requirement) => [requirement.id, requirement]));
  const collected = new Set(state.collected);
  const wasComplete = checklistProgress(state.requirements, collected).complete;
  for (const item of collectedItems) {
    const requirement = requirements.get(item.requirement_id);
    // A requirement deleted while the model was thinking is not collected.
    if (!requirement) continue;
    collected.add(requirement.id);
    const progress = checklistProgress(state.requirements, collected);
    events.push({
      type: 'checklist.item_collected',
      data: {
        lead_id: lead.lead_id,
        phone,
        lead_name: leadName(lead),
        requirement_id: requirement.id,
        requirement_name: requirement.name,
        requirement_type: requirement.type,
        value: item.attachment ? null : item.value,
        document: item.attachment && {
          document_id: item.attachment.document_id,
          content_type: item.attachment.content_type,
          file_size: item.attachment.file_size,
        },
        message_id: item.attachment?.message_id ?? turn.message_ids.at(-1) ?? null,
        checklist_progress: progress.progress,
        completed_items: progress.completed_count,
        total_items: progress.total_count,
      },
    });
  }
  const progress = checklistProgress(state.requirements, collected);
  if (progress.complete && !wasComplete) {
    events.push({
      type: 'checklist.completed',
      data: {
        lead_id: lead.lead_id,
        phone,
        lead_name: leadName(lead),
        checklist_progress: progress.progress,
        completed_items: progress.completed_count,
        total_items: progress.total_count,
      },
    });
    // The send decider has already moved a `new` lead to `contacted` if a reply went out.
    const status = replied && lead.status === 'new' ? 'contacted' : lead.status;
    if (status === 'new' || status === 'contacted') {
      events.push({
        type: 'lead.status_changed',
        data: { lead_id: lead.lead_id, phone, previous_status: status, new_status: 'qualified' },
      });
    }
  }
  return events;
}
