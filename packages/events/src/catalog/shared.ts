import { z } from 'zod';

/** Arbitrary partner-supplied key-value pairs, kept as given. */
export const metadataSchema = z.record(z.string(), z.unknown());

export const brandingSchema = z.object({
  logo_url: z.string().nullable(),
  accent_color: z.string().nullable(),
});
