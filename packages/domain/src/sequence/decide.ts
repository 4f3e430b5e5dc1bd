import { leadName, type NewEvent } from '@leadline/events';
import { heldForConsent, type ConsentState } from '../consent/decide';
import type { ConversationState } from '../conversation/decide';
import { decideSendMessage } from '../conversation/decide';
import type { Lead } from '../lead/state';
import {
  leadLocation,
  proactiveHold,
  type Hold,
  type HoldReason,
  type SendingWindow,
} from './sending-window';
import { renderTemplate, valuesOf } from './templates';
import type { Sequence, SequenceStep } from './definition';

/**
 * The order the events of many decided steps are appended in: by type, each step's own events keeping
 * their order (each step's events follow this order already). Projections apply a run of one type with
 * one statement, so 1,000 steps are a handful of statements rather than 4,000.
 */
const appendOrder = [
  'conversation.started',
  'message.outbound_requested',
  'lead.status_changed',
  'sequence.ai_step_requested',
  'sequence.step_sent',
  'sequence.step_skipped',
  // After the step done: a hold of the next step it scheduled applies to the step it moved to.
  'sequence.step_held',
  'sequence.step_held_for_consent',
  'sequence.completed',
];
export const inAppendOrder = <E extends NewEvent>(events: readonly E[]): E[] =>
  events
    .map((event, index) => ({ event, index, rank: appendOrder.indexOf(event.type) }))
    .sort((a, b) => a.rank - b.rank || a.index - b.index)
    .map(({ event }) => event);

/** Why an active enrollment waits: a rule of the sending window, or no consent (until it is given). */
export type EnrollmentHoldReason = HoldReason | 'no_consent';

/** An enrollment as the step deciders see it. */
export interface Enrollment {
  id: string;
  sequence_id: string;
  sequence_name: string;
  lead_id: string;
  phone: string;
  status: 'active' | 'completed' | 'cancelled' | 'opted_out' | 'removed';
  steps_version: number;
  total_steps: number;
  current_step: number;
  next_step_at: Date | null;
  awaiting_ai: boolean;
  replied: boolean;
  /**
   * Why its next step waits, if a rule held it: the window's and the state's rules until `next_step_at`;
   * `no_consent` until the number's consent is granted or the account stops requiring it (the step is
   * then overdue since `next_step_at`, and goes out at once).
   */
  hold_reason: EnrollmentHoldReason | null;
}

export interface Schedule {
  now: Date;
  /** How many seconds one `delay_hours` unit lasts (SEQUENCE_HOUR_SECONDS). */
  hourSeconds: number;
}

export type AccountForSteps = ConversationState['account'] & { sending_window: SendingWindow };

/**
 * When a step may go out: `delay_hours` after `from`, then moved to the first instant the lead's
 * sending window and its state's rules allow, counting the proactive messages it got (`sent`).
 */
export function stepDueAt(
  from: Date,
  delayHours: number,
  phone: string,
  window: SendingWindow,
  hourSeconds: number,
  sent: readonly Date[] = [],
): Date {
  const due = new Date(from.getTime() + delayHours * hourSeconds * 1000);
  return proactiveHold(due, window, leadLocation(phone, window.time_zone), sent)?.next_allowed_at ?? due;
}

/** Why a step due now may not go out now (the window, the lead's state's law), if it may not. */
export function stepHold(
  now: Date,
  phone: string,
  window: SendingWindow,
  sent: readonly Date[] = [],
): Hold | null {
  return proactiveHold(now, window, leadLocation(phone, window.time_zone), sent);
}

export interface StepState {
  account: AccountForSteps;
  sequence: Pick<Sequence, 'id' | 'is_active'> | undefined;
  enrollment: Enrollment | undefined;
  /** The steps of the enrollment's version. */
  steps: readonly SequenceStep[];
  lead: Lead | undefined;
  conversation: ConversationState['conversation'];
  /**
   * Proactive messages (sequence steps) the enrollment's number got in the last 24 hours, for the
   * states that cap them; empty when no cap applies.
   */
  sent?: readonly Date[];
  /** An opt-out answered to Twilio whose decision is still queued: the step waits as for an opt-out. */
  optOutPending: boolean;
  /** The account's consent rule and the number's consent: a step may be held until consent is given. */
  consent: ConsentState;
}

export const refOf = (enrollment: Enrollment) => ({
  enrollment_id: enrollment.id,
  sequence_id: enrollment.sequence_id,
  lead_id: enrollment.lead_id,
  phone: enrollment.phone,
});

/**
 * What follows a step that was done (sent or skipped) at `now`: the next step's due time, with its
 * hold when a rule moved it (the window, the lead's state's law), or completion. `sentNow` when the
 * step's message went out now (it counts toward the state's cap).
 */
export function afterStep(state: StepState, enrollment: Enrollment, schedule: Schedule, sentNow: boolean) {
  const next = enrollment.current_step + 1;
  const nextStep = state.steps[next];
  if (nextStep) {
    const sent = [...(state.sent ?? []), ...(sentNow ? [schedule.now] : [])];
    const due = new Date(schedule.now.getTime() + nextStep.delay_hours * schedule.hourSeconds * 1000);
    const hold = stepHold(due, enrollment.phone, state.account.sending_window, sent);
    return {
      nextStepAt: (hold?.next_allowed_at ?? due).toISOString(),
      following: hold ? [heldEvent({ ...refOf(enrollment), step_order: next }, 'due', hold)] : [],
    };
  }
  const completion: NewEvent = {
    type: 'sequence.completed',
    data: {
      ...refOf(enrollment),
      lead_name: leadName(state.lead),
      sequence_name: enrollment.sequence_name,
      total_steps: enrollment.total_steps,
    },
  };
  return { nextStepAt: null, following: [completion] };
}

/** The audit record of a held step. */
export function heldEvent(
  ref: ReturnType<typeof refOf> & { step_order: number },
  stage: 'due' | 'ai_send',
  hold: Hold,
): NewEvent {
  return {
    type: 'sequence.step_held',
    data: {
      ...ref,
      stage,
      reason: hold.reason,
      state: hold.state,
      zone: hold.zone,
      next_step_at: hold.next_allowed_at.toISOString(),
    },
  };
}

/** The audit record of a step held until the number's consent is granted (or no longer required). */
export function consentHeldEvent(
  ref: ReturnType<typeof refOf> & { step_order: number },
  stage: 'due' | 'ai_send',
  dueAt: Date,
): NewEvent {
  return {
    type: 'sequence.step_held_for_consent',
    data: { ...ref, stage, reason: 'no_consent', due_at: dueAt.toISOString() },
  };
}

/**
 * A due step (the sequencer claimed it, or step 0 at enrollment). Nothing happens when the claim is
 * stale (the enrollment moved on, ended or waits for the AI) or paused (deactivated account, inactive or
 * deleted sequence: the step goes out when that ends). An account that requires consent holds the step
 * of a number without it (`sequence.step_held_for_consent`) until it is granted. Outside the lead's
 * sending window, or past its
 * state's rules (hours, Sundays, holidays, messages per 24 hours), the step is held
 * (`sequence.step_held`) until every rule allows it. A lead who replied since the enrollment began has a
 * `skip_if_replied` step skipped. A fixed step goes through the same send decider as a manual message
 * (opt-out, deactivation); an AI step is handed to the AI agent. The last step done completes it.
 */
export function decideDueStep(
  state: StepState,
  stepOrder: number,
  schedule: Schedule & { messageId: string },
): NewEvent[] {
  const { enrollment, account, lead } = state;
  const { now } = schedule;
  if (
    !enrollment ||
    enrollment.status !== 'active' ||
    enrollment.current_step !== stepOrder ||
    enrollment.awaiting_ai ||
    !enrollment.next_step_at ||
    enrollment.next_step_at.getTime() > now.getTime()
  )
    return [];
  if (account.status !== 'active' || !state.sequence?.is_active || !lead) return [];
  if (state.conversation?.opted_out || state.optOutPending) return [];
  const step = state.steps[stepOrder];
  if (!step) return [];
  const ref = { ...refOf(enrollment), step_order: stepOrder };

  // Before the window: a step without consent waits for a grant, not for a time. Held once: a step
  // claimed again before its hold is projected (or after, by another sequencer) decides nothing new.
  if (heldForConsent(state.consent))
    return enrollment.hold_reason === 'no_consent' ? [] : [consentHeldEvent(ref, 'due', now)];
  const hold = stepHold(now, enrollment.phone, account.sending_window, state.sent);
  if (hold) return [heldEvent(ref, 'due', hold)];
  if (step.skip_if_replied && enrollment.replied) {
    const { nextStepAt, following } = afterStep(state, enrollment, schedule, false);
    return [
      { type: 'sequence.step_skipped', data: { ...ref, reason: 'replied', next_step_at: nextStepAt } },
      ...following,
    ];
  }
  const stepRef = {
    enrollment_id: enrollment.id,
    sequence_id: enrollment.sequence_id,
    step_order: stepOrder,
  };
  if (step.type === 'ai') {
    return [
      {
        type: 'sequence.ai_step_requested',
        data: { ...stepRef, phone: enrollment.phone, instructions: step.instructions ?? '' },
      },
    ];
  }
  const body = renderTemplate(step.message ?? '', valuesOf(lead, account.company_name));
  const sent = decideSendMessage(
    {
      type: 'SendMessage',
      message_id: schedule.messageId,
      phone: enrollment.phone,
      body,
      source: 'sequence',
      sender_name: null,
      sequence_step: stepRef,
    },
    { account, conversation: state.conversation, lead, optOutPending: state.optOutPending },
    now,
  );
  const { nextStepAt, following } = afterStep(state, enrollment, schedule, true);
  return [
    ...sent,
    {
      type: 'sequence.step_sent',
      data: { ...ref, message_id: schedule.messageId, next_step_at: nextStepAt },
    },
    ...following,
  ];
}

/**
 * The AI agent's answer to `sequence.ai_step_requested`: the message it requested (a
 * `message.outbound_requested` carrying the step) or `sequence.ai_step_failed`. A failed AI step is
 * skipped (`ai_failed`) and the enrollment moves on, so one unavailable model never stalls a sequence.
 * Answers for a step the enrollment is not waiting on (a repeat, an old enrollment) change nothing.
 */
export function decideAiStepOutcome(
  state: StepState,
  stepOrder: number,
  outcome: { kind: 'sent'; message_id: string } | { kind: 'failed' },
  schedule: Schedule,
): NewEvent[] {
  const { enrollment } = state;
  if (
    !enrollment ||
    enrollment.status !== 'active' ||
    !enrollment.awaiting_ai ||
    enrollment.current_step !== stepOrder
  )
    return [];
  const ref = { ...refOf(enrollment), step_order: stepOrder };
  // The AI's message is on the log before this answer is decided: `state.sent` counts it already.
  const { nextStepAt, following } = afterStep(state, enrollment, schedule, false);
  const done: NewEvent =
    outcome.kind === 'sent'
      ? {
          type: 'sequence.step_sent',
          data: { ...ref, message_id: outcome.message_id, next_step_at: nextStepAt },
        }
      : { type: 'sequence.step_skipped', data: { ...ref, reason: 'ai_failed', next_step_at: nextStepAt } };
  return [done, ...following];
}
