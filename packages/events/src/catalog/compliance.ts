import { z } from 'zod';
import { defineEvent } from '../define';

/**
 * Carrier registration of an account's number (US A2P 10DLC): the business behind the account, its
 * brand and its campaign go through the carriers' review before the number may send on its behalf.
 * Each step is `draft` until it is submitted, `pending` while the carrier reviews it, then `approved`
 * or `failed` (with the carrier's reason).
 */
export const registrationSteps = ['customer_profile', 'brand', 'campaign', 'number'] as const;
export const registrationStatuses = ['draft', 'pending', 'approved', 'failed'] as const;

export const businessTypes = [
  'sole_proprietorship',
  'partnership',
  'llc',
  'corporation',
  'co_operative',
  'non_profit',
] as const;

/** The industries the carriers' registry knows a business by. */
export const businessVerticals = [
  'agriculture',
  'automotive',
  'banking',
  'construction',
  'consumer',
  'education',
  'electronics',
  'energy',
  'engineering',
  'fast_moving_consumer_goods',
  'financial',
  'fintech',
  'food_and_beverage',
  'government',
  'healthcare',
  'hospitality',
  'insurance',
  'jewelry',
  'legal',
  'manufacturing',
  'media',
  'not_for_profit',
  'oil_and_gas',
  'online',
  'raw_materials',
  'real_estate',
  'religion',
  'retail',
  'technology',
  'telecommunications',
  'transportation',
  'travel',
] as const;

/** The campaign use cases that fit following up leads (the registry knows more). */
export const campaignUseCases = [
  'mixed',
  'marketing',
  'customer_care',
  'account_notification',
  'low_volume',
] as const;

export const contactJobPositions = [
  'director',
  'gm',
  'vp',
  'ceo',
  'cfo',
  'general_counsel',
  'other',
] as const;

/** What the carriers are told about the business and how it texts, the tax id aside. */
export const registrationProfileSchema = z.object({
  legal_name: z.string(),
  business_type: z.enum(businessTypes),
  vertical: z.enum(businessVerticals),
  website: z.string(),
  address: z.object({
    street: z.string(),
    street_secondary: z.string().nullable(),
    city: z.string(),
    region: z.string(),
    postal_code: z.string(),
    country: z.string(),
  }),
  /** The business's authorized representative, whom the registry may contact. */
  contact: z.object({
    first_name: z.string(),
    last_name: z.string(),
    title: z.string(),
    job_position: z.enum(contactJobPositions),
    email: z.string(),
    phone: z.string(),
  }),
  use_case: z.enum(campaignUseCases),
  use_case_description: z.string(),
  sample_messages: z.array(z.string()),
  /** How leads opt in to the messages (the campaign's "message flow"). */
  message_flow: z.string(),
  opt_in_keywords: z.array(z.string()),
  opt_in_message: z.string().nullable(),
  /** The campaign offers or arranges loans (mortgage lending is direct lending). */
  direct_lending: z.boolean(),
  has_embedded_links: z.boolean(),
  has_embedded_phone: z.boolean(),
});

/**
 * A partner submitted (or resubmitted) the business profile of the account: every step starts again
 * from `draft`. The tax id travels only sealed (AES-256-GCM, see @leadline/runtime's secret box, bound
 * to the partner and the account) with its last four digits for display, so a replay of the log never
 * reads it.
 */
export const registrationSubmitted = defineEvent('compliance.registration_submitted', {
  topic: 'account',
  data: z.object({
    submission_id: z.string(),
    profile: registrationProfileSchema,
    tax_id: z.object({ last4: z.string(), ciphertext: z.string() }),
  }),
});

/** A step of the submission moved on; `reason` is the carrier's when it failed. */
export const registrationStepChanged = defineEvent('compliance.registration_step_changed', {
  topic: 'account',
  data: z.object({
    submission_id: z.string(),
    step: z.enum(registrationSteps),
    previous_status: z.enum(registrationStatuses),
    status: z.enum(registrationStatuses),
    reason: z.string().nullable(),
  }),
});

/** What the registration created at the carrier's side, by the provider's id, so it is never made twice. */
export const carrierResources = [
  'customer_profile',
  'trust_product',
  'brand',
  'messaging_service',
  'campaign',
  'phone_number',
] as const;

export const registrationResourceCreated = defineEvent('compliance.registration_resource_created', {
  topic: 'account',
  data: z.object({
    submission_id: z.string(),
    resource: z.enum(carrierResources),
    provider_id: z.string(),
  }),
});
