import { requirementTypes } from '@leadline/events';
import { z } from 'zod';
import { MAX_REQUIREMENTS } from '@leadline/domain';
import { idParam, timestamp, uuid } from '../http/fields';

export const requirementParams = z.object({
  id: idParam('The account id.'),
  requirement_id: idParam('The requirement id.'),
});

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
  .strict()
  .meta({ id: 'CreateRequirementRequest' });

export const updateRequirementBody = z
  .object({
    name: name.optional(),
    type: z.enum(requirementTypes).optional(),
    description: description.nullable().optional(),
    required: z.boolean().optional(),
  })
  .strict()
  .meta({ id: 'UpdateRequirementRequest' });

export const requirementResponse = z
  .object({
    id: uuid(),
    name: z.string(),
    type: z.enum(requirementTypes),
    description: z.string().nullable(),
    required: z.boolean(),
    created_at: timestamp(),
  })
  .meta({ id: 'Requirement' });

export const requirementListResponse = z
  .object({ requirements: z.array(requirementResponse).max(MAX_REQUIREMENTS) })
  .meta({ id: 'RequirementList' });
