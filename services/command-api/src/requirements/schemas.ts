import { requirementTypes } from '@leadline/events';
import { z } from 'zod';

export const requirementParams = z.object({ id: z.string(), requirement_id: z.string() });

const name = z.string().trim().min(1, 'Must not be empty.').max(200);
const description = z
  .string()
  .trim()
  .max(2000)
  .describe('Instructions for the AI on how to collect the item.');

export const createRequirementBody = z
  .object({
    name,
    type: z.enum(requirementTypes),
    description: description.optional(),
    required: z.boolean().default(true),
  })
  .strict();

export const updateRequirementBody = z
  .object({
    name: name.optional(),
    type: z.enum(requirementTypes).optional(),
    description: description.nullable().optional(),
    required: z.boolean().optional(),
  })
  .strict();

export const requirementResponse = z.object({
  id: z.string(),
  name: z.string(),
  type: z.enum(requirementTypes),
  description: z.string().nullable(),
  required: z.boolean(),
  created_at: z.string(),
});

export const requirementListResponse = z.object({ requirements: z.array(requirementResponse) });
