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

/**
 * A URL a client sends, kept as the URL standard serializes it (a percent-encoded path, an ASCII host):
 * what any HTTP client sends anyway, and a valid `uri` wherever it is answered back or delivered to.
 * Bounded before and after: percent-encoding can triple a path.
 */
export const urlInput = (protocol: RegExp, error: string) =>
  z
    .url({ protocol, error })
    .max(2048)
    .transform((value, context) => {
      const href = new URL(value).href;
      if (href.length > 4096) {
        context.addIssue({ code: 'custom', message: 'Too long once percent-encoded.' });
        return z.NEVER;
      }
      return href;
    });

/** An http(s) URL (a logo, a form page, evidence), as `urlInput` keeps it. */
export const httpUrl = urlInput(/^https?$/, 'Must be an http(s) URL.');
