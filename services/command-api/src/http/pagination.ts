import { z } from 'zod';
import { count, INT32_MAX, PAGE_MAX } from './fields';

/** The spec's pagination, shared by every list endpoint: out-of-range values are a 400, not clamped. */
export const paginationQuery = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(PAGE_MAX)
    .default(50)
    .meta({ description: `Page size, 1-${PAGE_MAX}.`, format: 'int32' }),
  offset: z.coerce
    .number()
    .int()
    .min(0)
    .max(INT32_MAX)
    .default(0)
    .meta({ description: 'Items to skip.', format: 'int32' }),
});

export const pageFields = { total: count(), limit: count(), offset: count() };
