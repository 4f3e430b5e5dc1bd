import { z } from 'zod';

/** The spec's pagination, shared by every list endpoint: out-of-range values are a 400, not clamped. */
export const paginationQuery = z.object({
  limit: z.coerce.number().int().min(1).max(250).default(50).describe('Page size, 1-250.'),
  offset: z.coerce.number().int().min(0).default(0).describe('Items to skip.'),
});

export const pageFields = { total: z.number().int(), limit: z.number().int(), offset: z.number().int() };
