import { leadStatuses, requirementTypes } from '@leadline/events';
import { z } from 'zod';
import { metadataInput } from '../accounts/schemas';
import { pageFields, paginationQuery } from '../http/pagination';
import { phoneNumberSchema } from '../http/phone';

const text = (max: number) => z.string().trim().max(max);

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
  })
  .strict();

export const BULK_LIMIT = 1000;

export const bulkImportBody = z.object({
  leads: z
    .array(z.unknown())
    .min(1)
    .max(BULK_LIMIT, `At most ${BULK_LIMIT} leads per request.`)
    .describe(
      `Up to ${BULK_LIMIT} lead import objects, as for POST /accounts/{id}/leads. Each is validated on its own: ` +
        'an invalid one is reported in `errors` and the valid ones are imported.',
    ),
});

export const leadParams = z.object({
  id: z.string().describe('The account id.'),
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
  .meta({ description: 'Only the given fields change; null clears a field. The phone cannot change.' });

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

const timestamp = z.string();

export const importedLead = z.object({
  phone: z.string(),
  name: z.string().nullable(),
  email: z.string().nullable(),
  source: z.string().nullable(),
  external_id: z.string().nullable(),
  status: z.enum(leadStatuses),
  sequence_enrolled: z.boolean(),
  created_at: timestamp,
});

export const importResponse = z.object({
  success: z.literal(true),
  action: z.enum(['created', 'updated', 'skipped']),
  lead: importedLead,
});

export const bulkImportResponse = z.object({
  success: z.literal(true),
  imported: z.number().int(),
  updated: z.number().int(),
  skipped: z.number().int(),
  errors: z.array(
    z.object({
      index: z.number().int().describe('Position of the lead in the request.'),
      phone: z.string().nullable().describe('The phone as sent, if any.'),
      code: z.string(),
      message: z.string(),
    }),
  ),
});

export const leadListResponse = z.object({
  leads: z.array(
    z.object({
      phone: z.string(),
      name: z.string().nullable(),
      email: z.string().nullable(),
      status: z.enum(leadStatuses),
      source: z.string().nullable(),
      checklist_progress: z.number(),
      last_message_at: timestamp.nullable(),
      created_at: timestamp,
    }),
  ),
  ...pageFields,
});

const checklistStatus = z.enum(['completed', 'pending']);

export const leadDetailsResponse = z.object({
  phone: z.string(),
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
    .describe('The number texted STOP (or another opt-out keyword): no message can be sent to it.'),
  last_message_at: timestamp.nullable(),
  created_at: timestamp,
  checklist: z.object({
    progress: z.number(),
    items: z.array(
      z.object({
        name: z.string(),
        type: z.enum(requirementTypes),
        status: checklistStatus,
        collected_at: timestamp.optional(),
        value: z.string().optional(),
        file_url: z
          .string()
          .optional()
          .describe('For a collected document: a signed URL that serves it, valid for a limited time.'),
      }),
    ),
  }),
  conversation: z.object({
    message_count: z.number().int(),
    last_message_at: timestamp.nullable(),
    summary: z.string(),
    needs_handoff: z.boolean(),
  }),
  sequence: z
    .object({
      name: z.string(),
      status: z.string(),
      current_step: z.number().int(),
      total_steps: z.number().int(),
    })
    .nullable()
    .describe('The enrollment, or null when the lead is in no sequence.'),
});

export const checklistResponse = z.object({
  checklist: z.array(
    z.object({
      requirement_id: z.string(),
      name: z.string(),
      type: z.enum(requirementTypes),
      required: z.boolean(),
      status: checklistStatus,
      file_url: z
        .string()
        .optional()
        .describe('For a collected document: a signed URL that serves it, valid for a limited time.'),
      collected_at: timestamp.optional(),
      value: z.string().optional(),
    }),
  ),
  completed_count: z.number().int(),
  total_count: z.number().int(),
  progress: z.number().describe('Share of required items collected (of all items when none is required).'),
});

export const deletedResponse = z.object({ success: z.literal(true), deleted: z.literal(true) });
