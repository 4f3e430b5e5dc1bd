import { leadStatuses, requirementTypes } from '@leadline/events';
import { z } from 'zod';
import { metadataInput } from '../accounts/schemas';
import { consentGrantBody } from '../consent/schemas';
import { holdReason } from '../sequences/schemas';
import { count, e164, idParam, PAGE_MAX, timestamp, uuid } from '../http/fields';
import { pageFields, paginationQuery } from '../http/pagination';
import { phoneNumberSchema } from '../http/phone';

const text = (max: number) => z.string().trim().max(max);

/** A collected document's URL: it carries its own signature, so it needs no partner key. */
const signedUrl = () =>
  z.url().describe('For a collected document: a signed URL that serves it, valid for a limited time.');

const progress = z.number().min(0).max(1).meta({ description: 'Fraction collected, 0 to 1.' });

/** The lead fields a partner may set; all optional but the phone on import. */
const leadFields = z.object({
  name: text(200),
  first_name: text(100),
  last_name: text(100),
  email: z.email().max(320),
  company: text(200),
  notes: text(5000),
  source: text(100).describe('A label such as `application` or `collection`; a list filter.'),
  external_id: text(200).describe('Your own id for the lead; deduplicates like the phone.'),
  property_address: text(500),
});

/** Every field optional, and null allowed to clear it. */
function clearable<T extends Record<string, z.ZodType>>(shape: T) {
  return Object.fromEntries(
    Object.entries(shape).map(([key, schema]) => [key, schema.nullable().optional()]),
  ) as {
    [K in keyof T]: z.ZodOptional<z.ZodNullable<T[K]>>;
  };
}

export const leadImportBody = leadFields
  .partial()
  .extend({
    phone: phoneNumberSchema,
    auto_sequence: z.boolean().default(false).describe('Start the default sequence immediately.'),
    metadata: metadataInput.optional(),
    consent: consentGrantBody
      .optional()
      .describe(
        "The lead's consent to be texted, recorded in its consent trail (as `POST …/leads/{phone}/consent` " +
          'does) whatever the import does with its fields; needed for sequence steps where the account has ' +
          '`consent_required`.',
      ),
  })
  .strict()
  .meta({ id: 'LeadImport' });

export const BULK_LIMIT = 1000;
/** The bulk import's body limit: every field of `BULK_LIMIT` leads at its longest fits (22 MB). */
export const BULK_BODY_LIMIT = 24 * 1024 * 1024;

export const bulkImportBody = z
  .strictObject({
    leads: z
      // Each entry is validated on its own by the route (one bad lead must not refuse the others, and is
      // reported in the 200's `errors`), so an entry of any shape is valid here, in the validator and the
      // document alike; the shape each should have is LeadImport's.
      .array(z.unknown().meta({ description: 'A lead import object, shaped as the `LeadImport` schema.' }))
      .min(1)
      .max(BULK_LIMIT, `At most ${BULK_LIMIT} leads per request.`)
      .describe(
        `Up to ${BULK_LIMIT} lead import objects, each shaped as \`LeadImport\` (POST /accounts/{id}/leads). ` +
          'Each is validated on its own: an invalid one (a bad phone, an unknown field, not an object) is ' +
          'reported in `errors` of the 200 answer and the valid ones are imported.',
      ),
  })
  .meta({ id: 'BulkLeadImport' });

export const leadParams = z.object({
  id: idParam('The account id.'),
  phone: phoneNumberSchema.describe('The lead phone: `%2B15125550123`, `+15125550123` or `5125550123`.'),
});

export const updateLeadBody = z
  .object({
    ...clearable(leadFields.shape),
    status: z.enum(leadStatuses).optional(),
    auto_sequence: z.boolean().optional(),
    metadata: metadataInput
      .optional()
      .describe('Merged into the existing metadata; a key set to null is removed.'),
  })
  .strict()
  .meta({
    id: 'UpdateLeadRequest',
    description: 'Only the given fields change; null clears a field. The phone cannot change.',
  });

export const listLeadsQuery = paginationQuery.extend({
  status: z.enum(leadStatuses).optional(),
  source: z.string().trim().min(1).max(100).optional(),
  search: z
    .string()
    .trim()
    .min(1)
    .max(200)
    .optional()
    .describe('Matches name, email or phone, case-insensitive.'),
});

export const importedLead = z
  .object({
    phone: e164(),
    name: z.string().nullable(),
    email: z.string().nullable(),
    source: z.string().nullable(),
    external_id: z.string().nullable(),
    status: z.enum(leadStatuses),
    sequence_enrolled: z.boolean(),
    created_at: timestamp(),
  })
  .meta({ id: 'ImportedLead' });

export const importResponse = z
  .object({
    success: z.literal(true),
    action: z
      .enum(['created', 'updated', 'skipped'])
      .describe("What happened to the lead's fields (its consent is `consent_recorded`)."),
    consent_recorded: z
      .boolean()
      .describe(
        'A `consent` was given and recorded (false without one, or when the lead already had that very grant).',
      ),
    lead: importedLead,
  })
  .meta({ id: 'LeadImportResult' });

export const bulkImportResponse = z
  .object({
    success: z.literal(true),
    imported: count(),
    updated: count(),
    skipped: count(),
    consents_recorded: count().describe(
      'Leads whose `consent` was recorded (as `consent_recorded` of a single import).',
    ),
    errors: z
      .array(
        z
          .object({
            index: count()
              .max(BULK_LIMIT - 1)
              .describe('Position of the lead in the request.'),
            phone: z.string().nullable().describe('The phone as sent, if any.'),
            code: z
              .enum(['invalid_phone', 'validation_failed'])
              .describe('`invalid_phone` when the phone is the problem, `validation_failed` otherwise.'),
            message: z.string().describe('The field and what is wrong with it.'),
          })
          .meta({ id: 'BulkImportError' }),
      )
      .max(BULK_LIMIT),
  })
  .meta({ id: 'BulkImportResult' });

export const leadListResponse = z
  .object({
    leads: z
      .array(
        z
          .object({
            phone: e164(),
            name: z.string().nullable(),
            email: z.string().nullable(),
            status: z.enum(leadStatuses),
            source: z.string().nullable(),
            checklist_progress: progress,
            last_message_at: timestamp().nullable(),
            created_at: timestamp(),
          })
          .meta({ id: 'Lead' }),
      )
      .max(PAGE_MAX),
    ...pageFields,
  })
  .meta({ id: 'LeadList' });

const checklistStatus = z.enum(['completed', 'pending']);

/** Requirements per account are capped, so are checklist items. */
const CHECKLIST_MAX = 100;

export const leadDetailsResponse = z
  .object({
    phone: e164(),
    name: z.string().nullable(),
    first_name: z.string().nullable(),
    last_name: z.string().nullable(),
    email: z.string().nullable(),
    company: z.string().nullable(),
    notes: z.string().nullable(),
    status: z.enum(leadStatuses),
    source: z.string().nullable(),
    external_id: z.string().nullable(),
    property_address: z.string().nullable(),
    auto_sequence: z.boolean(),
    metadata: z.record(z.string(), z.unknown()),
    opted_out: z
      .boolean()
      .describe(
        'The number opted out (STOP, another opt-out keyword, or a request in words not to be contacted): no message can be sent to it.',
      ),
    last_message_at: timestamp().nullable(),
    created_at: timestamp(),
    checklist: z
      .object({
        progress,
        items: z
          .array(
            z
              .object({
                name: z.string(),
                type: z.enum(requirementTypes),
                status: checklistStatus,
                collected_at: timestamp().optional(),
                value: z.string().optional(),
                file_url: signedUrl().optional(),
              })
              .meta({ id: 'LeadChecklistItem' }),
          )
          .max(CHECKLIST_MAX),
      })
      .meta({ id: 'LeadChecklist' }),
    conversation: z
      .object({
        message_count: count(),
        last_message_at: timestamp().nullable(),
        summary: z.string(),
        needs_handoff: z.boolean(),
      })
      .meta({ id: 'LeadConversation' }),
    sequence: z
      .object({
        sequence_id: uuid(),
        name: z.string(),
        status: z
          .enum(['active', 'paused', 'completed', 'cancelled', 'opted_out'])
          .describe(
            '`paused` while the account is deactivated or the sequence inactive; `opted_out` when the number ' +
              'opted out during the sequence (it stops for good; enrolling again after START starts over).',
          ),
        current_step: count().describe('Steps sent or skipped so far: the 0-based order of the next one.'),
        total_steps: count(),
        next_step_at: timestamp()
          .nullable()
          .describe(
            "When the next step goes out, inside the lead's sending window; null while it waits for consent.",
          ),
        hold_reason: holdReason,
      })
      .meta({ id: 'LeadSequence' })
      .nullable()
      .describe('The active enrollment, else the latest one; null when the lead was never enrolled.'),
  })
  .meta({ id: 'LeadDetails' });

export const checklistResponse = z
  .object({
    checklist: z
      .array(
        z
          .object({
            requirement_id: uuid(),
            name: z.string(),
            type: z.enum(requirementTypes),
            required: z.boolean(),
            status: checklistStatus,
            file_url: signedUrl().optional(),
            collected_at: timestamp().optional(),
            value: z.string().optional(),
          })
          .meta({ id: 'ChecklistItem' }),
      )
      .max(CHECKLIST_MAX),
    completed_count: count(),
    total_count: count(),
    progress: progress.describe('Share of required items collected (of all items when none is required).'),
  })
  .meta({ id: 'Checklist' });

export const deletedResponse = z
  .object({ success: z.literal(true), deleted: z.literal(true) })
  .meta({ id: 'Deleted' });

export const erasedResponse = z
  .object({
    success: z.literal(true),
    lead_id: uuid()
      .nullable()
      .describe('The erased lead; null when the number had no lead any more, or was erased before.'),
    erased: z.literal(true),
    erased_at: timestamp().describe(
      'When the person was erased (for a repeated request: when it was last erased).',
    ),
  })
  .meta({ id: 'LeadErased' });
