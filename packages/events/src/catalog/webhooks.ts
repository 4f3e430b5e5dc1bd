import { z } from 'zod';
import { defineEvent } from '../define';
import { webhookEventTypes } from '../webhook-events';

const subscribedEvents = z.array(z.enum(webhookEventTypes));

/**
 * Partner-level webhook configuration, on the partner topic keyed by partner id. The signing secret
 * travels only as AES-256-GCM ciphertext (see @leadline/runtime's secret box), so a replay of the log
 * rebuilds the webhook without the secret ever being readable on the log.
 */
export const webhookCreated = defineEvent('webhook.created', {
  topic: 'partner',
  data: z.object({
    webhook_id: z.string(),
    url: z.string(),
    events: subscribedEvents,
    secret_ciphertext: z.string(),
  }),
});

/** Only the fields that changed are present. `active: true` also re-enables a disabled webhook. */
export const webhookUpdated = defineEvent('webhook.updated', {
  topic: 'partner',
  data: z.object({
    webhook_id: z.string(),
    changes: z.object({
      url: z.string().optional(),
      events: subscribedEvents.optional(),
      active: z.boolean().optional(),
    }),
  }),
});

export const webhookDeleted = defineEvent('webhook.deleted', {
  topic: 'partner',
  data: z.object({ webhook_id: z.string() }),
});

/**
 * An operator re-sealed the webhook's secret under the newest encryption key (same secret, new
 * ciphertext). The `webhook.created` before it keeps its old ciphertext: the log is never rewritten.
 */
export const webhookSecretResealed = defineEvent('webhook.secret_resealed', {
  topic: 'partner',
  data: z.object({ webhook_id: z.string(), secret_ciphertext: z.string() }),
});

/** The relay switched the webhook off because its endpoint answered 410 Gone. */
export const webhookDisabled = defineEvent('webhook.disabled', {
  topic: 'partner',
  data: z.object({
    webhook_id: z.string(),
    reason: z.literal('gone'),
    delivery_id: z.string(),
    status_code: z.number().int(),
  }),
});

/**
 * A delivery exhausted its retries and was dropped (spec §6 rule 4): the log entry behind the
 * dashboard's `webhook.delivery_failed`. Not a subscribable webhook event.
 */
export const webhookDeliveryFailed = defineEvent('webhook.delivery_failed', {
  topic: 'partner',
  data: z.object({
    webhook_id: z.string(),
    delivery_id: z.string(),
    event_id: z.string(),
    event_type: z.string(),
    account_id: z.string().nullable(),
    attempts: z.number().int(),
    last_status_code: z.number().int().nullable(),
    last_error: z.string().nullable(),
  }),
});
