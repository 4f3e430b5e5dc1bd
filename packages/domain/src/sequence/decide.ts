import { leadName, type EventData, type NewEvent } from '@leadline/events';
import { conflict, DomainError, notFound } from '../errors';
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

/** A step of a sequence, as the partner defines it (its `order` is its position). */
export interface SequenceStep {
  type: 'fixed' | 'ai';
  message: string | null;
  instructions: string | null;
  delay_hours: number;
  skip_if_replied: boolean;
}

export const MAX_STEPS = 50;
export const MAX_SEQUENCES = 100;

export interface Sequence {
  id: string;
  name: string;
  description: string | null;
  is_active: boolean;
  is_default: boolean;
  steps: SequenceStep[];
  steps_version: number;
}

export type SequenceChanges = Partial<
  Pick<Sequence, 'name' | 'description' | 'is_active' | 'is_default' | 'steps'>
>;

export type SequenceCommand =
  | { type: 'CreateSequence'; sequence: Omit<Sequence, 'steps_version'> }
  | { type: 'UpdateSequence'; sequence_id: string; changes: SequenceChanges }
  | { type: 'DeleteSequence'; sequence_id: string; active_enrollments: number };

/** The default sequence loses its flag when another one takes it: one default per account. */
function previousDefaultCleared(sequences: readonly Sequence[], newDefault: string): NewEvent[] {
  return sequences
    .filter((sequence) => sequence.is_default && sequence.id !== newDefault)
    .map((sequence) => ({
      type: 'sequence.updated',
      data: { sequence_id: sequence.id, changes: { is_default: false } },
    }));
}

/** The account's sequences decider. Updating steps makes a new steps version; enrollments keep theirs. */
export function decideSequences(command: SequenceCommand, sequences: readonly Sequence[]): NewEvent[] {
  switch (command.type) {
    case 'CreateSequence': {
      if (sequences.length >= MAX_SEQUENCES) {
        throw new DomainError(
          400,
          'sequence_limit_reached',
          `An account has at most ${MAX_SEQUENCES} sequences.`,
        );
      }
      const { id, ...fields } = command.sequence;
      return [
        ...(fields.is_default ? previousDefaultCleared(sequences, id) : []),
        { type: 'sequence.created', data: { sequence_id: id, ...fields, steps_version: 1 } },
      ];
    }
    case 'UpdateSequence': {
      const current = sequences.find((sequence) => sequence.id === command.sequence_id);
      if (!current) throw notFound('sequence');
      const changes: EventData<'sequence.updated'>['changes'] = {};
      const { steps, ...fields } = command.changes;
      for (const [key, value] of Object.entries(fields) as [keyof typeof fields, unknown][]) {
        if (value !== undefined && value !== current[key]) Object.assign(changes, { [key]: value });
      }
      if (steps && JSON.stringify(steps) !== JSON.stringify(current.steps)) {
        changes.steps = steps;
        changes.steps_version = current.steps_version + 1;
      }
      if (Object.keys(changes).length === 0) return [];
      return [
        ...(changes.is_default ? previousDefaultCleared(sequences, current.id) : []),
        { type: 'sequence.updated', data: { sequence_id: current.id, changes } },
      ];
    }
    case 'DeleteSequence': {
      if (!sequences.some((sequence) => sequence.id === command.sequence_id)) throw notFound('sequence');
      return [
        {
          type: 'sequence.deleted',
          data: { sequence_id: command.sequence_id, cancelled_enrollments: command.active_enrollments },
        },
      ];
    }
    default: {
      const unknownCommand: never = command;
      throw new Error(`Unknown command ${(unknownCommand as { type: string }).type}`);
    }
  }
}

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

type AccountForSteps = ConversationState['account'] & { sending_window: SendingWindow };

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

const refOf = (enrollment: Enrollment) => ({
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
function afterStep(state: StepState, enrollment: Enrollment, schedule: Schedule, sentNow: boolean) {
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

export type UnenrollResult = { action: 'unenrolled' | 'not_enrolled' };

/**
 * Takes a lead out of a sequence: its active enrollment ends (`unenrolled`); a lead that is not in the
 * sequence now (never enrolled, completed, cancelled, stopped) is left alone (`not_enrolled`).
 */
export function decideUnenroll(state: EnrollState): { events: NewEvent[]; result: UnenrollResult } {
  const { sequence, lead, enrollment } = state;
  if (!sequence) throw notFound('sequence');
  if (!lead) throw notFound('lead');
  if (enrollment?.status !== 'active') return { events: [], result: { action: 'not_enrolled' } };
  return {
    events: [{ type: 'sequence.unenrolled', data: refOf(enrollment) }],
    result: { action: 'unenrolled' },
  };
}

export interface EnrollState {
  account: AccountForSteps;
  sequence: Sequence | undefined;
  lead: Lead | undefined;
  conversation: ConversationState['conversation'];
  /** The lead's enrollment in this sequence, if it ever had one. */
  enrollment: Enrollment | undefined;
  /** As `StepState.sent`. */
  sent?: readonly Date[];
  /** As `StepState.optOutPending`: the lead is refused as for an opt-out. */
  optOutPending: boolean;
  /** As `StepState.consent`: step 0 due at once is held without consent (the enrollment is made). */
  consent: ConsentState;
}

export interface EnrollResult {
  action: 'enrolled' | 'already_enrolled' | 'reactivated';
  message_sent: boolean;
  /** Null when no step is left, or while the next one waits for consent. */
  next_step_at: string | null;
  hold_reason: EnrollmentHoldReason | null;
}

/**
 * Enrolls a lead at step 0; a lead whose enrollment ended (cancelled, opted out, completed) starts
 * again (`reactivated`). Step 0 due at once goes out in the same decision (`message_sent`); otherwise
 * `next_step_at` says when (after its delay, inside the lead's sending window). Without consent where
 * the account requires it the lead is still enrolled: step 0, once due, waits for consent
 * (`hold_reason: no_consent`), so a grant recorded later starts the sequence where it stands.
 */
export function decideEnroll(
  command: { enrollment_id: string; message_id: string },
  state: EnrollState,
  schedule: Schedule,
): { events: NewEvent[]; result: EnrollResult } {
  const { account, sequence, lead, conversation, enrollment } = state;
  if (!sequence) throw notFound('sequence');
  if (!lead) throw notFound('lead');
  if (enrollment?.status === 'active') {
    return {
      events: [],
      result: {
        action: 'already_enrolled',
        message_sent: false,
        next_step_at:
          enrollment.hold_reason === 'no_consent' ? null : (enrollment.next_step_at?.toISOString() ?? null),
        hold_reason: enrollment.hold_reason,
      },
    };
  }
  if (!sequence.is_active) {
    throw conflict('sequence_inactive', 'The sequence is inactive; activate it to enroll leads.');
  }
  if (account.status !== 'active') {
    throw conflict('account_deactivated', 'The account is deactivated; reactivate it to enroll leads.');
  }
  if (conversation?.opted_out || state.optOutPending) {
    throw conflict(
      'lead_opted_out',
      'This number opted out (it texted STOP or asked not to be contacted); it can opt back in with START.',
    );
  }
  const action = enrollment ? 'reactivated' : 'enrolled';
  const first = sequence.steps[0]!;
  const due = new Date(schedule.now.getTime() + first.delay_hours * schedule.hourSeconds * 1000);
  const hold = stepHold(due, lead.phone, account.sending_window, state.sent);
  const dueAt = hold?.next_allowed_at ?? due;
  const enrolled: Enrollment = {
    id: command.enrollment_id,
    sequence_id: sequence.id,
    sequence_name: sequence.name,
    lead_id: lead.lead_id,
    phone: lead.phone,
    status: 'active',
    steps_version: sequence.steps_version,
    total_steps: sequence.steps.length,
    current_step: 0,
    next_step_at: dueAt,
    awaiting_ai: false,
    replied: false,
    hold_reason: hold?.reason ?? null,
  };
  const events: NewEvent[] = [
    {
      type: 'sequence.enrolled',
      data: {
        enrollment_id: enrolled.id,
        sequence_id: sequence.id,
        lead_id: lead.lead_id,
        phone: lead.phone,
        action,
        steps_version: sequence.steps_version,
        total_steps: enrolled.total_steps,
        next_step_at: dueAt.toISOString(),
      },
    },
  ];
  if (hold) {
    events.push(
      heldEvent(
        {
          enrollment_id: enrolled.id,
          sequence_id: sequence.id,
          lead_id: lead.lead_id,
          phone: lead.phone,
          step_order: 0,
        },
        'due',
        hold,
      ),
    );
  }
  if (dueAt.getTime() > schedule.now.getTime()) {
    return {
      events,
      result: {
        action,
        message_sent: false,
        next_step_at: dueAt.toISOString(),
        hold_reason: hold?.reason ?? null,
      },
    };
  }
  const stepEvents = decideDueStep(
    {
      account,
      sequence,
      enrollment: enrolled,
      steps: sequence.steps,
      lead,
      conversation,
      sent: state.sent,
      optOutPending: state.optOutPending,
      consent: state.consent,
    },
    0,
    { ...schedule, messageId: command.message_id },
  );
  const sent = stepEvents.find((event) => event.type === 'sequence.step_sent');
  const nextStepAt = sent?.type === 'sequence.step_sent' ? sent.data.next_step_at : null;
  const heldForNoConsent = stepEvents.some((event) => event.type === 'sequence.step_held_for_consent');
  return {
    events: [...events, ...stepEvents],
    result: {
      action,
      message_sent: sent !== undefined,
      // An AI step 0 is being written by the AI now: it is due now.
      next_step_at: sent ? nextStepAt : heldForNoConsent ? null : dueAt.toISOString(),
      hold_reason: heldForNoConsent ? 'no_consent' : heldReasonOf(stepEvents),
    },
  };
}

/** The reason of the first time-bound hold among `events` (the next step's, after one sent). */
const heldReasonOf = (events: readonly NewEvent[]) => {
  const held = events.find((event) => event.type === 'sequence.step_held');
  return held?.type === 'sequence.step_held' ? held.data.reason : null;
};

/**
 * `auto_sequence` on import: each lead imported with it starts the account's default sequence, unless
 * it already has an enrollment in it (active or ended: a re-import never restarts a sequence), the
 * number opted out (or its opt-out is answered and not yet decided), the account is deactivated or
 * there is no active default. Step 0 is left to the sequencer, which decides all of an account's due
 * steps in one command: the import stays one quick append and answers before the messages are
 * decided. A step 0 moved by the sending window or the lead's state's rules is on the log as
 * `sequence.step_held` after the enrollments, as any held step is.
 */
export function decideAutoEnrollments(
  leads: readonly { lead: Lead; auto_sequence: boolean }[],
  state: {
    account: AccountForSteps;
    defaultSequence: Sequence | undefined;
    /** Leads that have an enrollment in the default sequence, and whether it is active. */
    enrolled: ReadonlyMap<string, boolean>;
    /** Numbers opted out (projected, or answered to Twilio and not yet decided). */
    optedOut: ReadonlySet<string>;
  },
  context: Schedule & { newId: () => string },
): { events: NewEvent[]; inSequence: Set<string> } {
  const { account, defaultSequence: sequence } = state;
  const inSequence = new Set([...state.enrolled].filter(([, active]) => active).map(([leadId]) => leadId));
  const events: NewEvent[] = [];
  if (!sequence?.is_active || account.status !== 'active') return { events, inSequence };
  const first = sequence.steps[0]!;
  const enrollments: EventData<'sequence.leads_enrolled'>['enrollments'] = [];
  const holds: NewEvent[] = [];
  for (const { lead, auto_sequence } of leads) {
    if (!auto_sequence || state.enrolled.has(lead.lead_id) || inSequence.has(lead.lead_id)) continue;
    if (state.optedOut.has(lead.phone)) continue;
    const due = new Date(context.now.getTime() + first.delay_hours * context.hourSeconds * 1000);
    const hold = stepHold(due, lead.phone, account.sending_window);
    const enrollment = {
      enrollment_id: context.newId(),
      lead_id: lead.lead_id,
      phone: lead.phone,
      next_step_at: (hold?.next_allowed_at ?? due).toISOString(),
    };
    enrollments.push(enrollment);
    // As for an enrollment one by one (and every later step): a moved step 0 is on the log as a hold.
    if (hold) {
      const ref = { ...enrollment, sequence_id: sequence.id, step_order: 0 };
      holds.push(
        heldEvent(
          {
            enrollment_id: ref.enrollment_id,
            sequence_id: ref.sequence_id,
            lead_id: ref.lead_id,
            phone: ref.phone,
            step_order: 0,
          },
          'due',
          hold,
        ),
      );
    }
    inSequence.add(lead.lead_id);
  }
  if (enrollments.length > 0) {
    events.push({
      type: 'sequence.leads_enrolled',
      data: {
        sequence_id: sequence.id,
        steps_version: sequence.steps_version,
        total_steps: sequence.steps.length,
        enrollments,
      },
    });
    // After the enrollments they move (the projector applies a hold to an enrollment it has).
    events.push(...holds);
  }
  return { events, inSequence };
}

/** A message from a lead with active enrollments: one `sequence.reply_received` per enrollment. */
export function decideSequenceReplies(
  enrollments: readonly Enrollment[],
  message: { message_id: string; body: string; lead_name: string | null },
): NewEvent[] {
  return enrollments
    .filter((enrollment) => enrollment.status === 'active')
    .map((enrollment) => ({
      type: 'sequence.reply_received',
      data: {
        ...refOf(enrollment),
        lead_name: message.lead_name,
        sequence_name: enrollment.sequence_name,
        current_step: enrollment.current_step,
        total_steps: enrollment.total_steps,
        message_id: message.message_id,
        message_body: message.body,
      },
    }));
}
