import { isDeepStrictEqual } from 'node:util';
import type { NewEvent } from '@leadline/events';
import { conflict } from '../errors';
import { registrationStatus, type Registration, type RegistrationProfile } from './state';

export interface SubmitRegistration {
  type: 'SubmitRegistration';
  submission_id: string;
  profile: RegistrationProfile;
  /** The tax id as given (normalized), and what goes on the log: its last four digits and its sealed form. */
  tax_id: { value: string; last4: string; ciphertext: string };
}

export interface RegistrationSubmissionState {
  registration: Registration | undefined;
  /** The current submission's tax id, opened, so a repeated submission is told from a changed one. */
  currentTaxId: string | undefined;
}

/**
 * A partner submits the account's business profile. The same profile again changes nothing (a PUT
 * retried). Another profile starts a new submission only when there is none yet or a step failed:
 * the carriers cannot change what they are reviewing, and an approved registration is what the
 * account sends under.
 */
export function decideRegistrationSubmission(
  command: SubmitRegistration,
  state: RegistrationSubmissionState,
): NewEvent[] {
  const { registration } = state;
  if (registration) {
    const unchanged =
      state.currentTaxId === command.tax_id.value && isDeepStrictEqual(registration.profile, command.profile);
    if (unchanged) return [];
    const status = registrationStatus(registration);
    if (status === 'approved') {
      throw conflict(
        'registration_approved',
        "The carriers approved this account's registration; its business profile can no longer change.",
      );
    }
    if (status !== 'failed') {
      throw conflict(
        'registration_in_review',
        "The account's registration is being reviewed; it can be submitted again once a step has failed.",
      );
    }
  }
  return [
    {
      type: 'compliance.registration_submitted',
      data: {
        submission_id: command.submission_id,
        profile: command.profile,
        tax_id: { last4: command.tax_id.last4, ciphertext: command.tax_id.ciphertext },
      },
    },
  ];
}
