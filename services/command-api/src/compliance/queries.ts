import { registrationStatus, REGISTRATION_STEPS, type RegistrationProfile } from '@leadline/domain';
import { toRegistration, type RegistrationRow } from '@leadline/decision-state';
import type { z } from 'zod';
import type { RegistrationBody, registrationResponse } from './schemas';

/** The tax id as answers show it: its last four digits. */
export const maskedTaxId = (last4: string) => `XX-XXX${last4}`;

const LINK = /https?:\/\/|\bwww\.|\b[a-z0-9-]+\.(?:com|net|org|io|co|us|biz|info|app|ly)\b/i;
const PHONE = /(?:\+?1[\s.-]?)?\(?\d{3}\)?[\s.-]?\d{3}[\s.-]?\d{4}\b/;

/**
 * The profile the carriers get: the request's fields, with what the request left to us filled in.
 * Whether the messages carry links or phone numbers is read from the samples when not said.
 */
export function profileOf(body: Omit<RegistrationBody, 'tax_id'>): RegistrationProfile {
  const { address, has_embedded_links, has_embedded_phone, opt_in_message, ...fields } = body;
  return {
    ...fields,
    address: { ...address, street_secondary: address.street_secondary ?? null },
    opt_in_message: opt_in_message ?? null,
    has_embedded_links: has_embedded_links ?? body.sample_messages.some((sample) => LINK.test(sample)),
    has_embedded_phone: has_embedded_phone ?? body.sample_messages.some((sample) => PHONE.test(sample)),
  };
}

type RegistrationResponse = z.input<typeof registrationResponse>;

/** The registration as the API answers it; every step a draft before any submission. */
export function toRegistrationResponse(
  accountId: string,
  row: RegistrationRow | undefined,
): RegistrationResponse {
  if (!row) {
    const draft = { status: 'draft' as const, reason: null, updated_at: null };
    return {
      account_id: accountId,
      status: 'draft',
      submitted_at: null,
      updated_at: null,
      profile: null,
      steps: { customer_profile: draft, brand: draft, campaign: draft, number: draft },
    };
  }
  const registration = toRegistration(row);
  return {
    account_id: accountId,
    status: registrationStatus(registration),
    submitted_at: registration.submitted_at.toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
    profile: { ...registration.profile, tax_id: maskedTaxId(registration.tax_id.last4) },
    steps: Object.fromEntries(
      REGISTRATION_STEPS.map((step) => {
        const { status, reason, updated_at } = registration.steps[step];
        return [step, { status, reason, updated_at: updated_at.toISOString() }];
      }),
    ) as RegistrationResponse['steps'],
  };
}
