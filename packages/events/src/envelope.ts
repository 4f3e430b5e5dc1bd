import { z } from 'zod';
import { findUnstorableText } from './text';

/** Who caused an event: a partner's API key, a user of the embedded dashboard, or one of our services. */
export const actorSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('partner_key'), partner_id: z.string(), key_id: z.string() }),
  z.object({ kind: z.literal('embed_user'), user_name: z.string(), user_role: z.string() }),
  z.object({ kind: z.literal('system'), service: z.string() }),
]);
export type Actor = z.infer<typeof actorSchema>;

/** The topic an event type lives on; the codec turns it into a concrete (possibly prefixed) topic name. */
export type TopicKind = 'account' | 'partner';

/**
 * Every record on the log is this envelope around a type-specific `data` object. The envelope and
 * the data together are one JSON Schema per event type in the registry, so a consumer that knows
 * nothing of this code base can validate and read any record.
 */
type AccountIdSchema<K extends TopicKind> = K extends 'account' ? z.ZodString : z.ZodNull;

export function envelopeSchema<const T extends string, D extends z.ZodType, K extends TopicKind>(
  type: T,
  version: number,
  data: D,
  topic: K,
) {
  return z
    .object({
      id: z.uuid(),
      type: z.literal(type),
      version: z.literal(version),
      // Partner-level events (partner and webhook configuration) belong to no sub-account.
      account_id: (topic === 'account' ? z.string() : z.null()) as AccountIdSchema<K>,
      partner_id: z.string(),
      occurred_at: z.iso.datetime(),
      actor: actorSchema,
      correlation_id: z.string(),
      causation_id: z.string().nullable(),
      data,
    })
    .superRefine((event, context) => {
      // Every event type refuses text a projection could not store (see text.ts). A refinement is not
      // part of the registered JSON Schema, so this adds no incompatible change to any subject.
      const problem = findUnstorableText(event);
      if (problem)
        context.addIssue({ code: 'custom', message: problem.message, path: problem.field.split('.') });
    });
}
