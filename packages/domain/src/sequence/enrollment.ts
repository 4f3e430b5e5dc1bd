/** A lead's enrollments: enroll, unenroll, the default sequence on import, replies. */
import { type EventData, type NewEvent } from '@leadline/events';
import { conflict, notFound } from '../errors';
import { type ConsentState } from '../consent/decide';
import type { ConversationState } from '../conversation/decide';
import type { Lead } from '../lead/state';
import type { Sequence } from './definition';
import {
  decideDueStep,
  heldEvent,
  refOf,
  stepHold,
  type AccountForSteps,
  type Enrollment,
  type EnrollmentHoldReason,
  type Schedule,
} from './decide';

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
