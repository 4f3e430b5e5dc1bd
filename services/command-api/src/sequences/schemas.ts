import { sequenceStepTypes } from '@leadline/events';
import { z } from 'zod';
import { holdReasons, MAX_STEPS, templateVariables, unknownVariables } from '@leadline/domain';
import { count, idParam, PAGE_MAX, timestamp, uuid } from '../http/fields';
import { pageFields } from '../http/pagination';
import { phoneNumberSchema } from '../http/phone';

const variablesList = templateVariables.map((name) => `{{${name}}}`).join(', ');

const timing = {
  delay_hours: z
    .number()
    .int('Must be a whole number of hours.')
    .min(0, 'Must not be negative.')
    .max(8760)
    .default(0)
    .describe('Hours after the previous step was sent or skipped (after enrollment for step 0).'),
  skip_if_replied: z
    .boolean()
    .default(true)
    .describe('Skip the step when the lead has sent any message since the enrollment began.'),
};

const fixedStepInput = z
  .strictObject({
    type: z.literal('fixed'),
    message: z
      .string({ error: (issue) => (issue.input === undefined ? 'A fixed step needs a message.' : undefined) })
      .trim()
      .min(1)
      .max(1600)
      .describe(
        `The template. Variables: ${variablesList}; \`{{first_name|there}}\` gives a fallback ` +
          'for a lead without the value. Without one, `first_name` and `name` render as "there", ' +
          '`property_address` as "your property", the others as nothing (the spaces they leave are tidied).',
      )
      .superRefine((message, context) => {
        const unknown = unknownVariables(message);
        if (unknown.length > 0) {
          context.addIssue({
            code: 'custom',
            message: `Unknown template variable ${unknown.map((name) => `{{${name}}}`).join(', ')}; use ${variablesList}.`,
          });
        }
      }),
    ...timing,
  })
  .meta({ id: 'FixedStepInput', description: 'A step that sends its template.' });

const aiStepInput = z
  .strictObject({
    type: z.literal('ai'),
    instructions: z
      .string({
        error: (issue) => (issue.input === undefined ? 'An AI step needs instructions.' : undefined),
      })
      .trim()
      .min(1)
      .max(4000)
      .describe('What the AI should say.'),
    ...timing,
  })
  .meta({
    id: 'AiStepInput',
    description: 'A step the AI writes from its instructions and the conversation.',
  });

// A union on `type`, so the document says what the server checks: a `fixed` step needs `message`, an
// `ai` step `instructions`, and neither takes the other's text.
const stepInput = z
  .discriminatedUnion('type', [fixedStepInput, aiStepInput], {
    error: (issue) =>
      issue.code === 'invalid_union' ? 'Must be a step of type `fixed` or `ai`.' : undefined,
  })
  .meta({ id: 'SequenceStepInput' });

const stepsInput = z
  .array(stepInput)
  .min(1, 'A sequence needs at least one step.')
  .max(MAX_STEPS, `At most ${MAX_STEPS} steps.`);

const name = z.string().trim().min(1, 'Must not be empty.').max(200);
const description = z.string().trim().max(2000);

export const createSequenceBody = z
  .strictObject({
    name,
    description: description.optional(),
    is_active: z.boolean().default(true),
    is_default: z
      .boolean()
      .default(false)
      .describe('The default sequence is the one `auto_sequence` imports start.'),
    steps: stepsInput,
  })
  .meta({ id: 'CreateSequence' });

export const updateSequenceBody = z
  .strictObject({
    name: name.optional(),
    description: description.nullable().optional(),
    is_active: z.boolean().optional(),
    is_default: z
      .boolean()
      .optional()
      .describe('True makes this the default; the previous default stops being one.'),
    steps: stepsInput.optional().describe('New steps apply to new enrollments only.'),
  })
  .meta({ id: 'UpdateSequence' });

export const sequenceParams = z.object({
  id: idParam('The account id.'),
  sequence_id: idParam('The sequence id.'),
});

export const enrollBody = z.strictObject({ phone: phoneNumberSchema }).meta({ id: 'EnrollLead' });

const step = z
  .object({
    order: count().describe('0-based position.'),
    type: z.enum(sequenceStepTypes),
    message: z.string().nullable(),
    instructions: z.string().nullable(),
    delay_hours: count(),
    skip_if_replied: z.boolean(),
  })
  .meta({ id: 'SequenceStepDetails', description: 'A step as stored, with its position.' });

export const sequenceResponse = z
  .object({
    id: uuid(),
    name: z.string(),
    description: z.string().nullable(),
    is_active: z.boolean(),
    is_default: z.boolean(),
    steps: z.array(step).max(MAX_STEPS),
    enrolled_count: count().describe('Enrollments started, reactivations included.'),
    completed_count: count().describe('Enrollments that finished every step.'),
    created_at: timestamp(),
  })
  .meta({ id: 'Sequence' });

export const sequenceListResponse = z
  .object({ sequences: z.array(sequenceResponse).max(PAGE_MAX), ...pageFields })
  .meta({ id: 'SequenceList' });

export const deleteSequenceResponse = z
  .object({ success: z.literal(true), cancelled_enrollments: count() })
  .meta({ id: 'SequenceDeleted' });

/** Why an enrollment's next step waits; shared by the enrollment views. */
export const holdReason = z
  .enum([...holdReasons, 'no_consent'])
  .nullable()
  .describe(
    "Why the next step waits, if a rule holds it: `quiet_hours` (the account's sending window), `state_hours`, " +
      "`state_sunday`, `state_holiday` or `frequency_cap` (the lead's state's law) until `next_step_at`; " +
      '`no_consent` (the account has `consent_required` and the lead has no consent recorded) until consent ' +
      'is recorded, with no `next_step_at` meanwhile. Null when nothing holds it.',
  )
  .meta({ id: 'HoldReason' });

export const enrollResponse = z
  .object({
    success: z.literal(true),
    action: z.enum(['enrolled', 'already_enrolled', 'reactivated']),
    message_sent: z.boolean().describe('Step 0 was queued for sending in this request.'),
    next_step_at: timestamp()
      .nullable()
      .describe(
        "When the next step goes out, inside the lead's sending window; null when none is left or it waits for consent.",
      ),
    hold_reason: holdReason,
  })
  .meta({ id: 'Enrollment' });

export const unenrollResponse = z
  .object({
    success: z.literal(true),
    action: z
      .enum(['unenrolled', 'not_enrolled'])
      .describe('`not_enrolled`: the lead was not in the sequence (any more); nothing changed.'),
  })
  .meta({ id: 'Unenrollment' });

export const leadEnrollmentsResponse = z
  .object({
    enrollments: z
      .array(
        z
          .object({
            sequence_id: uuid(),
            name: z.string().describe('The sequence name when the lead was enrolled.'),
            status: z
              .enum(['active', 'paused', 'completed', 'cancelled', 'opted_out'])
              .describe(
                '`paused` while the account is deactivated or the sequence inactive; `cancelled` when the lead ' +
                  'was taken out or the sequence deleted; `opted_out` when the number opted out during it.',
              ),
            current_step: count().describe(
              'Steps sent or skipped so far: the 0-based order of the next one.',
            ),
            total_steps: count(),
            next_step_at: timestamp().nullable(),
            hold_reason: holdReason,
            started_at: timestamp(),
            ended_at: timestamp().nullable(),
          })
          .meta({ id: 'LeadEnrollment' }),
      )
      .max(PAGE_MAX)
      .describe('Active enrollments first, then the latest; one per sequence the lead was ever in.'),
  })
  .meta({ id: 'LeadEnrollments' });
