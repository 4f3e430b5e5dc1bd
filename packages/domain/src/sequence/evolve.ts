import type { NewEvent } from '@leadline/events';
import { evolveConsent } from '../consent/decide';
import { evolveConversation } from '../conversation/evolve';
import { evolveLead } from '../lead/evolve';
import type { Enrollment, StepState } from './decide';

/** Which enrollments an event is about. */
export type EnrollmentTarget =
  | { by: 'id'; enrollment_id: string }
  /** A number's enrollments that began by the event (a later one must not see an earlier reply). */
  | { by: 'phone'; phone: string }
  | { by: 'lead'; lead_id: string }
  | { by: 'sequence'; sequence_id: string }
  /** Every enrollment of the event's account. */
  | { by: 'account' };

/** The enrollment fields an event may set. */
export type EnrollmentFields = Pick<
  Enrollment,
  'status' | 'current_step' | 'next_step_at' | 'awaiting_ai' | 'replied' | 'hold_reason'
>;

/**
 * What an event does to the enrollments it is about: the fields it sets on those that are in the state
 * `when` names (so a step done twice, as a redelivery does, matches nothing the second time), and
 * whether that ends them. The projector turns each into one statement (many, batched, for a run of one
 * shape), and a decision that decides several steps at once applies them to its state between steps
 * (`evolveEnrollment`): one rule for both.
 */
export interface EnrollmentChange {
  target: EnrollmentTarget;
  when: Partial<Pick<Enrollment, 'status' | 'current_step' | 'awaiting_ai' | 'hold_reason'>> & {
    notRemoved?: true;
  };
  set: Partial<EnrollmentFields>;
  ends?: true;
}

const nextAt = (iso: string | null) => (iso === null ? null : new Date(iso));

/** The change `event` makes to enrollments, or undefined (enrolling creates them: see the projector). */
export function enrollmentChange(event: NewEvent): EnrollmentChange | undefined {
  switch (event.type) {
    case 'sequence.step_sent':
    case 'sequence.step_skipped':
      return {
        target: { by: 'id', enrollment_id: event.data.enrollment_id },
        when: { current_step: event.data.step_order },
        set: {
          current_step: event.data.step_order + 1,
          next_step_at: nextAt(event.data.next_step_at),
          awaiting_ai: false,
          hold_reason: null,
        },
      };
    // `next_step_at` shows when the held step goes out (an AI-written one stays awaited meanwhile).
    case 'sequence.step_deferred':
    case 'sequence.step_held':
      return {
        target: { by: 'id', enrollment_id: event.data.enrollment_id },
        when: { current_step: event.data.step_order, status: 'active' },
        set: { next_step_at: nextAt(event.data.next_step_at), hold_reason: event.data.reason },
      };
    // Held until consent: the step stays due since `due_at` (an AI step goes back to the sequencer,
    // which asks the AI afresh once released), but is not claimed while the hold stands.
    case 'sequence.step_held_for_consent':
      return {
        target: { by: 'id', enrollment_id: event.data.enrollment_id },
        when: { current_step: event.data.step_order, status: 'active' },
        set: { next_step_at: new Date(event.data.due_at), awaiting_ai: false, hold_reason: 'no_consent' },
      };
    // Consent given, or no longer required: steps held for it are due again (overdue since their hold).
    case 'lead.consent_granted':
      return {
        target: { by: 'phone', phone: event.data.phone },
        when: { status: 'active', hold_reason: 'no_consent' },
        set: { hold_reason: null },
      };
    case 'account.updated':
      return event.data.consent_required === false
        ? {
            target: { by: 'account' },
            when: { status: 'active', hold_reason: 'no_consent' },
            set: { hold_reason: null },
          }
        : undefined;
    case 'sequence.ai_step_requested':
      return {
        target: { by: 'id', enrollment_id: event.data.enrollment_id },
        when: { current_step: event.data.step_order, status: 'active', awaiting_ai: false },
        set: { awaiting_ai: true, next_step_at: null, hold_reason: null },
      };
    case 'sequence.completed':
      return {
        target: { by: 'id', enrollment_id: event.data.enrollment_id },
        when: { status: 'active' },
        set: { status: 'completed', next_step_at: null },
        ends: true,
      };
    case 'sequence.unenrolled':
      return {
        target: { by: 'id', enrollment_id: event.data.enrollment_id },
        when: { status: 'active' },
        set: { status: 'cancelled', next_step_at: null, awaiting_ai: false },
        ends: true,
      };
    case 'sequence.deleted':
      return {
        target: { by: 'sequence', sequence_id: event.data.sequence_id },
        when: { status: 'active' },
        set: { status: 'cancelled', next_step_at: null },
        ends: true,
      };
    // skip_if_replied looks at any inbound message since the enrollment began.
    case 'message.received':
      return {
        target: { by: 'phone', phone: event.data.phone },
        when: { status: 'active' },
        set: { replied: true },
      };
    // An opted-out number gets nothing from a sequence: its enrollments stop for good; enrolling it
    // again after it opts back in starts over.
    case 'lead.opted_out':
      return {
        target: { by: 'phone', phone: event.data.phone },
        when: { status: 'active' },
        set: { status: 'opted_out', next_step_at: null },
        ends: true,
      };
    // Kept as `removed` rather than deleted, so an enrollment seen again on a replay is not counted again.
    case 'lead.deleted':
      return {
        target: { by: 'lead', lead_id: event.data.lead_id },
        when: { notRemoved: true },
        set: { status: 'removed', next_step_at: null },
        ends: true,
      };
    default:
      return undefined;
  }
}

const targets = (target: EnrollmentTarget, enrollment: Enrollment) => {
  switch (target.by) {
    case 'id':
      return enrollment.id === target.enrollment_id;
    // Every enrollment a decision has loaded began before what the decision decides.
    case 'phone':
      return enrollment.phone === target.phone;
    case 'lead':
      return enrollment.lead_id === target.lead_id;
    case 'sequence':
      return enrollment.sequence_id === target.sequence_id;
    // A decision's enrollments are all of its own account.
    case 'account':
      return true;
    default: {
      const unknown: never = target;
      throw new Error(`Unknown target ${String(unknown)}`);
    }
  }
};

/** Whether `change` applies to `enrollment`: it is about it, and it is in the state the change needs. */
export function enrollmentMatches(change: EnrollmentChange, enrollment: Enrollment): boolean {
  const { when } = change;
  return (
    targets(change.target, enrollment) &&
    (when.status === undefined || enrollment.status === when.status) &&
    (when.current_step === undefined || enrollment.current_step === when.current_step) &&
    (when.awaiting_ai === undefined || enrollment.awaiting_ai === when.awaiting_ai) &&
    (when.hold_reason === undefined || enrollment.hold_reason === when.hold_reason) &&
    (!when.notRemoved || enrollment.status !== 'removed')
  );
}

export function evolveEnrollment(enrollment: Enrollment, event: NewEvent): Enrollment {
  const change = enrollmentChange(event);
  return change && enrollmentMatches(change, enrollment) ? { ...enrollment, ...change.set } : enrollment;
}

/**
 * The state a step decision reads, after `event` at `at`: its enrollment, the number's lead and
 * conversation, and the proactive messages the number got (a sequence step sent now counts toward its
 * state's daily cap). Only events about the state's own number change it.
 */
export function evolveStepState(state: StepState, event: NewEvent, at: Date): StepState {
  const phone = state.enrollment?.phone;
  if (phone === undefined || !('phone' in event.data) || event.data.phone !== phone) {
    return state.enrollment ? { ...state, enrollment: evolveEnrollment(state.enrollment, event) } : state;
  }
  const proactive = event.type === 'message.outbound_requested' && event.data.source === 'sequence';
  return {
    ...state,
    enrollment: state.enrollment && evolveEnrollment(state.enrollment, event),
    conversation: evolveConversation(state.conversation, event),
    lead: evolveLead(state.lead, event, at),
    consent: evolveConsent(state.consent, event),
    ...(proactive && { sent: [...(state.sent ?? []), at] }),
  };
}
