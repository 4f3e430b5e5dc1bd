import { webhookEventTypes } from '@leadline/events';
import { z } from 'zod';
import { pageFields, paginationQuery } from '../http/pagination';

const eventsList = z
  .array(z.enum(webhookEventTypes, { error: `Must be one of: ${webhookEventTypes.join(', ')}.` }))
  .min(1, 'Subscribe to at least one event.')
  .meta({ description: 'Subscribed event types; `webhook.delivery_failed` is not subscribable.' });

/** HTTPS only (spec §8); credentials in the URL are refused, the signature is the authentication. */
const webhookUrl = z
  .url({ protocol: /^https$/, error: 'Must be an https:// URL.' })
  .max(2048)
  .refine((value) => {
    // Zod runs refinements even after the URL check failed; a value that is no URL is not this error.
    if (!URL.canParse(value)) return true;
    const url = new URL(value);
    return url.username === '' && url.password === '';
  }, 'Must not carry credentials.')
  .meta({ example: 'https://crm.example.com/hooks/leadline' });

export const webhookParams = z.object({ webhook_id: z.string().describe('The webhook id.') });
export const deliveryParams = webhookParams.extend({ delivery_id: z.string().describe('The delivery id.') });

export const createWebhookBody = z.object({
  url: webhookUrl,
  events: eventsList,
  secret: z
    .string()
    .min(16, 'Use at least 16 characters.')
    .max(256)
    .describe('Key of the HMAC-SHA256 signatures. Stored encrypted, never returned.'),
});

export const updateWebhookBody = z
  .object({
    url: webhookUrl.optional(),
    events: eventsList.optional(),
    active: z.boolean().optional().describe('`true` re-enables a webhook disabled by a 410 answer.'),
  })
  .strict()
  .meta({ description: 'Any subset of url, events and active. The secret cannot change.' });

export const webhookResponse = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(z.enum(webhookEventTypes)),
  active: z.boolean(),
  created_at: z.string(),
});

export const webhookListResponse = z.object({ webhooks: z.array(webhookResponse) });
export const deleteWebhookResponse = z.object({ success: z.literal(true), deleted: z.literal(true) });

const deliveryStatus = z.enum(['pending', 'succeeded', 'failed', 'cancelled']).meta({
  description:
    '`pending`: an attempt is scheduled at `next_attempt_at`. `succeeded`: a 2xx arrived. `failed`: ' +
    'the retries are exhausted, or the endpoint answered 410 (the `webhook.delivery_failed` entry). ' +
    '`cancelled`: the webhook was disabled or deleted before the delivery succeeded.',
});

export const listDeliveriesQuery = paginationQuery.extend({ status: deliveryStatus.optional() });

export const deliveryResponse = z.object({
  id: z.string().describe('Also sent as `X-Service-Delivery-Id`; the same on every retry.'),
  event_id: z.string(),
  event_type: z.string(),
  account_id: z.string().nullable(),
  status: deliveryStatus,
  attempt_count: z.number().int(),
  next_attempt_at: z.string().nullable(),
  last_status_code: z.number().int().nullable(),
  last_error: z.string().nullable(),
  created_at: z.string(),
  completed_at: z.string().nullable(),
  attempts: z.array(
    z.object({
      attempt: z.number().int().describe('1 for the first attempt, 2 for the first retry, …'),
      attempted_at: z.string(),
      status_code: z.number().int().nullable(),
      error: z.string().nullable(),
      duration_ms: z.number().int(),
      response_excerpt: z.string().nullable().describe('The first 1 KB of the answer body.'),
    }),
  ),
});

export const deliveryListResponse = z.object({ deliveries: z.array(deliveryResponse), ...pageFields });

export const queuedDeliveryResponse = z.object({
  delivery_id: z.string(),
  status: z.literal('pending'),
  next_attempt_at: z.string(),
});
