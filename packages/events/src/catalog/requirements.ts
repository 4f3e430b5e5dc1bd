import { z } from 'zod';
import { defineEvent } from '../define';

export const requirementTypes = ['document', 'text', 'email', 'phone', 'number', 'date'] as const;
export const requirementTypeSchema = z.enum(requirementTypes);

export const requirementCreated = defineEvent('requirement.created', {
  topic: 'account',
  data: z.object({
    requirement_id: z.string(),
    name: z.string(),
    type: requirementTypeSchema,
    description: z.string().nullable(),
    required: z.boolean(),
  }),
});

export const requirementUpdated = defineEvent('requirement.updated', {
  topic: 'account',
  data: z.object({
    requirement_id: z.string(),
    changes: z.object({
      name: z.string().optional(),
      type: requirementTypeSchema.optional(),
      description: z.string().nullable().optional(),
      required: z.boolean().optional(),
    }),
  }),
});

/** The definition goes; values already collected for leads are kept. */
export const requirementDeleted = defineEvent('requirement.deleted', {
  topic: 'account',
  data: z.object({ requirement_id: z.string() }),
});
