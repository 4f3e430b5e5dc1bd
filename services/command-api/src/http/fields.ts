import { z } from 'zod';

/**
 * Field shapes shared by the response schemas, so the document states what the server guarantees:
 * ids are UUIDs, times ISO 8601 with an offset, phones E.164, counts 32-bit and never negative.
 */
export const uuid = () => z.uuid();

/** An id in a path or a query: a UUID, as documented; anything else is a 400 naming the parameter. */
export const idParam = (description: string) => z.uuid('Must be a UUID.').max(36).meta({ description });

export const timestamp = () => z.iso.datetime({ offset: true }).meta({ example: '2026-01-15T14:30:00.000Z' });

export const E164_PATTERN = /^\+[1-9]\d{1,14}$/;
export const e164 = () =>
  z.string().regex(E164_PATTERN).meta({ description: 'E.164.', example: '+15125550123' });

export const INT32_MAX = 2_147_483_647;
export const count = () => z.number().int().min(0).max(INT32_MAX).meta({ format: 'int32' });

/** The most items a list page holds (the `limit` bound). */
export const PAGE_MAX = 250;
