import {
  businessTypes,
  businessVerticals,
  campaignUseCases,
  contactJobPositions,
  registrationStatuses,
  registrationSteps,
} from '@leadline/events';
import { z } from 'zod';
import { accountParams } from '../accounts/schemas';
import { httpUrl, timestamp, uuid } from '../http/fields';
import { phoneNumberSchema } from '../http/phone';

export { accountParams as registrationParams };

const text = (min: number, max: number) =>
  z
    .string()
    .trim()
    .min(min, min > 1 ? `At least ${min} characters.` : 'Must not be empty.')
    .max(max);

/** A US Employer Identification Number: `12-3456789` or 9 digits, kept as `12-3456789`. */
const einInput = z
  .string()
  .max(20)
  .regex(/^\s*\d{2}-?\d{7}\s*$/, 'Must be a US EIN such as 12-3456789.')
  .transform((value) => {
    const digits = value.replace(/\D/g, '');
    return `${digits.slice(0, 2)}-${digits.slice(2)}`;
  })
  .meta({
    description:
      "The business's US Employer Identification Number, `12-3456789` or 9 digits. Write-only: it is " +
      'stored encrypted and answers show only its last four digits.',
    examples: ['12-3456789'],
  });

const keyword = z
  .string()
  .trim()
  .max(30)
  .regex(/^[A-Za-z0-9]{1,30}$/, 'Letters and digits only (at most 30).');

const addressFields = {
  street: text(1, 200),
  street_secondary: text(1, 200).nullable(),
  city: text(1, 100),
  region: text(1, 100).describe('State or region, e.g. `TX`.'),
  postal_code: text(1, 20),
  country: z
    .string()
    .max(2)
    .regex(/^[A-Z]{2}$/, 'An ISO 3166 country code such as US.')
    .describe('ISO 3166-1 alpha-2.'),
};

const contactFields = {
  first_name: text(1, 100),
  last_name: text(1, 100),
  title: text(1, 100).describe("The representative's title, e.g. `Compliance officer`."),
  job_position: z.enum(contactJobPositions),
  email: z.email().max(320),
};

const profileDescriptions = {
  legal_name: 'Exactly as on the EIN records (IRS letter CP 575): a mismatch is the commonest refusal.',
  website: "The business's public website, which the carriers' reviewers visit.",
  use_case_description: 'What the messages are for (40 to 4,096 characters).',
  sample_messages:
    'Two to five messages as leads will receive them (20 to 1,024 characters each), naming the business ' +
    'and, in one at least, how to opt out.',
  message_flow:
    'How leads agree to receive messages, e.g. the consent checkbox on a loan application form and its URL ' +
    '(40 to 2,048 characters).',
  opt_in_keywords: 'Keywords a lead may text to opt in, if any.',
  opt_in_message: 'The reply to an opt-in keyword (20 to 320 characters); required with `opt_in_keywords`.',
  direct_lending: 'The messages offer or arrange loans (mortgage lending is direct lending).',
};

export const registrationBody = z
  .strictObject({
    legal_name: text(1, 255).describe(profileDescriptions.legal_name),
    tax_id: einInput,
    business_type: z.enum(businessTypes),
    vertical: z.enum(businessVerticals).describe("The business's industry."),
    website: httpUrl.describe(profileDescriptions.website),
    address: z
      .strictObject({
        ...addressFields,
        street_secondary: addressFields.street_secondary.optional(),
        country: addressFields.country.default('US'),
      })
      .meta({ id: 'CarrierRegistrationRequestAddress' })
      .describe("The business's registered address."),
    contact: z
      .strictObject({ ...contactFields, phone: phoneNumberSchema })
      .meta({ id: 'CarrierRegistrationRequestContact' })
      .describe("The business's authorized representative, whom the carriers' registry may contact."),
    use_case: z.enum(campaignUseCases).default('mixed').describe('The campaign use case.'),
    use_case_description: text(40, 4096).describe(profileDescriptions.use_case_description),
    sample_messages: z
      .array(text(20, 1024))
      .min(2, 'At least 2 sample messages.')
      .max(5, 'At most 5 sample messages.')
      .describe(profileDescriptions.sample_messages),
    message_flow: text(40, 2048).describe(profileDescriptions.message_flow),
    opt_in_keywords: z.array(keyword).max(10).default([]).describe(profileDescriptions.opt_in_keywords),
    opt_in_message: text(20, 320).optional().describe(profileDescriptions.opt_in_message),
    direct_lending: z.boolean().default(false).describe(profileDescriptions.direct_lending),
    has_embedded_links: z
      .boolean()
      .optional()
      .describe('The messages contain links; when omitted, whether a sample message does.'),
    has_embedded_phone: z
      .boolean()
      .optional()
      .describe('The messages contain phone numbers; when omitted, whether a sample message does.'),
  })
  .refine((body) => body.opt_in_keywords.length === 0 || body.opt_in_message !== undefined, {
    message: 'Required with `opt_in_keywords`.',
    path: ['opt_in_message'],
  })
  .meta({
    id: 'CarrierRegistrationRequest',
    description:
      "The business behind the account, as the carriers' registration of its number (US A2P 10DLC) needs it.",
  });

export type RegistrationBody = z.output<typeof registrationBody>;

const stepResponse = z
  .object({
    status: z.enum(registrationStatuses),
    reason: z.string().nullable().describe("The carrier's reason when the step failed; null otherwise."),
    updated_at: timestamp().nullable().describe('When the step took its status; null before any submission.'),
  })
  .meta({ id: 'CarrierRegistrationStep' });

const profileResponse = z
  .object({
    legal_name: z.string(),
    tax_id: z.string().meta({
      description: 'Masked: only the last four digits of the EIN.',
      example: 'XX-XXX6789',
    }),
    business_type: z.enum(businessTypes),
    vertical: z.enum(businessVerticals),
    website: z.url(),
    address: z.object(addressFields).meta({ id: 'CarrierRegistrationAddress' }),
    contact: z
      .object({ ...contactFields, email: z.string(), phone: z.string() })
      .meta({ id: 'CarrierRegistrationContact' }),
    use_case: z.enum(campaignUseCases),
    use_case_description: z.string(),
    sample_messages: z.array(z.string()).max(5),
    message_flow: z.string(),
    opt_in_keywords: z.array(z.string()).max(10),
    opt_in_message: z.string().nullable(),
    direct_lending: z.boolean(),
    has_embedded_links: z.boolean(),
    has_embedded_phone: z.boolean(),
  })
  .meta({ id: 'CarrierRegistrationProfile' });

export const registrationResponse = z
  .object({
    account_id: uuid(),
    status: z
      .enum(registrationStatuses)
      .describe(
        '`draft` before anything was submitted to the carriers, `failed` when a step failed, `approved` ' +
          'when every step is, `pending` otherwise.',
      ),
    submitted_at: timestamp().nullable(),
    updated_at: timestamp().nullable(),
    profile: profileResponse
      .nullable()
      .describe('The business profile as submitted; null before any submission.'),
    steps: z
      .object(
        Object.fromEntries(registrationSteps.map((step) => [step, stepResponse])) as {
          [K in (typeof registrationSteps)[number]]: typeof stepResponse;
        },
      )
      .meta({ id: 'CarrierRegistrationSteps' })
      .describe(
        'In order: the business profile (`customer_profile`), the `brand`, the `campaign`, and the ' +
          "account's `number` joining the campaign's messaging service. Each starts when the one before " +
          'is approved.',
      ),
  })
  .meta({ id: 'CarrierRegistration' });
