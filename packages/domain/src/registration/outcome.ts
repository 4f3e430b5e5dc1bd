import { nextRegistrationAction, stepOf, waitsOnReview, type RegistrationAction } from './plan';
import { nextCheckAt, type CheckSchedule } from './schedule';
import {
  evolveRegistration,
  type CarrierResource,
  type Registration,
  type RegistrationEvent,
  type RegistrationStatus,
} from './state';

/** What the carrier says of something submitted to it. */
export type CarrierVerdict =
  { status: 'pending' } | { status: 'approved' } | { status: 'failed'; reason: string };

/** What came back from carrying out an action. */
export type ActionOutcome =
  /** Something was created (and submitted); the verdict is its state as the provider answered. */
  | { kind: 'created'; resource: CarrierResource; id: string; verdict: CarrierVerdict }
  /** The carrier's current verdict on what the action looked at. */
  | { kind: 'verdict'; verdict: CarrierVerdict }
  /** The provider refused the request for good (bad data, not an outage): the step fails with its reason. */
  | { kind: 'refused'; reason: string };

/**
 * The status a step takes from an action's verdict. The trust product and the messaging service are
 * the carriers' means to the brand and the campaign, not the steps themselves: only their failure
 * shows; an approved trust product leaves the brand pending until the brand itself is approved.
 */
function statusAfter(action: RegistrationAction, current: RegistrationStatus, verdict: CarrierVerdict) {
  if (verdict.status === 'failed') return 'failed';
  switch (action.kind) {
    case 'submit_trust_product':
      return 'pending';
    case 'register_brand':
      return verdict.status === 'approved' ? 'approved' : 'pending';
    case 'create_messaging_service':
      return current;
    default:
      return verdict.status;
  }
}

export interface RegistrationOutcomeDecision {
  events: RegistrationEvent[];
  /** When the worker should act again: now, on the check schedule, or never (null: done or failed). */
  nextAt: Date | null;
}

/**
 * Records what an action achieved: the resource it created, the step's new status (with the carrier's
 * reason when it failed), and when to come back. Pure: the worker called the provider before, outside
 * any lock, and appends these events under the account's lock afterwards.
 */
export function decideRegistrationOutcome(
  registration: Registration,
  action: RegistrationAction,
  outcome: ActionOutcome,
  now: Date,
  schedule: CheckSchedule,
): RegistrationOutcomeDecision {
  const { submission_id } = registration;
  const events: RegistrationEvent[] = [];
  if (outcome.kind === 'created') {
    events.push({
      type: 'compliance.registration_resource_created',
      data: { submission_id, resource: outcome.resource, provider_id: outcome.id },
    });
  }
  const verdict: CarrierVerdict =
    outcome.kind === 'refused' ? { status: 'failed', reason: outcome.reason } : outcome.verdict;
  const step = stepOf(action);
  const previous = registration.steps[step].status;
  const status = statusAfter(action, previous, verdict);
  if (status !== previous) {
    events.push({
      type: 'compliance.registration_step_changed',
      data: {
        submission_id,
        step,
        previous_status: previous,
        status,
        reason: verdict.status === 'failed' ? verdict.reason : null,
      },
    });
  }
  let after: Registration = registration;
  for (const event of events) after = evolveRegistration(after, event, now)!;
  const next = nextRegistrationAction(after);
  if (!next) return { events, nextAt: null };
  if (!waitsOnReview(next)) return { events, nextAt: now };
  return { events, nextAt: nextCheckAt(after.steps[stepOf(next)].updated_at, now, schedule) };
}
