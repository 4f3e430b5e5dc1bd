import type {
  carrierResources,
  EventData,
  NewEvent,
  registrationStatuses,
  registrationSteps,
} from '@leadline/events';

export type RegistrationStep = (typeof registrationSteps)[number];
export type RegistrationStatus = (typeof registrationStatuses)[number];
export type CarrierResource = (typeof carrierResources)[number];
export type RegistrationProfile = EventData<'compliance.registration_submitted'>['profile'];

/** The steps in the order the carriers take them: each waits for the one before to be approved. */
export const REGISTRATION_STEPS: readonly RegistrationStep[] = [
  'customer_profile',
  'brand',
  'campaign',
  'number',
];

export interface RegistrationStepState {
  status: RegistrationStatus;
  /** The carrier's reason, when the step failed. */
  reason: string | null;
  /** When the step took its status (its submission's time while it is a draft). */
  updated_at: Date;
}

/** An account's current registration: its latest submission and how far the carriers got with it. */
export interface Registration {
  submission_id: string;
  profile: RegistrationProfile;
  tax_id: { last4: string; ciphertext: string };
  submitted_at: Date;
  steps: Record<RegistrationStep, RegistrationStepState>;
  /** What was created at the provider for this submission, by the provider's id. */
  resources: Partial<Record<CarrierResource, string>>;
}

/** The registration as a whole: failed if a step failed, approved once every step is, draft before any moved. */
export function registrationStatus(registration: Registration | undefined): RegistrationStatus {
  if (!registration) return 'draft';
  const statuses = REGISTRATION_STEPS.map((step) => registration.steps[step].status);
  if (statuses.includes('failed')) return 'failed';
  if (statuses.every((status) => status === 'approved')) return 'approved';
  if (statuses.every((status) => status === 'draft')) return 'draft';
  return 'pending';
}

export type RegistrationEvent = Extract<NewEvent, { type: `compliance.${string}` }>;

/**
 * A registration after one of its events, `at` the event's time. A submission starts every step
 * again; the other events only count for the submission they name (a worker's late outcome for an
 * earlier submission changes nothing).
 */
export function evolveRegistration(
  registration: Registration | undefined,
  event: RegistrationEvent,
  at: Date,
): Registration | undefined {
  switch (event.type) {
    case 'compliance.registration_submitted': {
      const { data } = event;
      const draft = { status: 'draft' as const, reason: null, updated_at: at };
      return {
        submission_id: data.submission_id,
        profile: data.profile,
        tax_id: data.tax_id,
        submitted_at: at,
        steps: { customer_profile: draft, brand: draft, campaign: draft, number: draft },
        resources: {},
      };
    }
    case 'compliance.registration_step_changed': {
      const { data } = event;
      if (!registration || registration.submission_id !== data.submission_id) return registration;
      return {
        ...registration,
        steps: {
          ...registration.steps,
          [data.step]: { status: data.status, reason: data.reason, updated_at: at },
        },
      };
    }
    case 'compliance.registration_resource_created': {
      const { data } = event;
      if (!registration || registration.submission_id !== data.submission_id) return registration;
      return { ...registration, resources: { ...registration.resources, [data.resource]: data.provider_id } };
    }
    default: {
      const unknownEvent: never = event;
      throw new Error(`Unknown registration event ${JSON.stringify(unknownEvent)}`);
    }
  }
}
