import { webhookEventTypes } from '@leadline/events';
import { z } from 'zod';
import { MAX_WEBHOOKS_PER_PARTNER } from '@leadline/domain';
import { count, idParam, INT32_MAX, PAGE_MAX, timestamp, urlInput, uuid } from '../http/fields';
import { pageFields, paginationQuery } from '../http/pagination';
import { deletedResponse } from '../leads/schemas';

const eventsList = z
  .array(z.enum(webhookEventTypes, { error: `Must be one of: ${webhookEventTypes.join(', ')}.` }))
  .min(1, 'Subscribe to at least one event.')
  .max(webhookEventTypes.length)
  .meta({ description: 'Subscribed event types; `webhook.delivery_failed` is not subscribable.' });

/** HTTPS only (spec §8); credentials in the URL are refused, the signature is the authentication. */
const webhookUrl = urlInput(/^https$/, 'Must be an https:// URL.')
  .refine((value) => {
    const url = new URL(value);
    return url.username === '' && url.password === '';
  }, 'Must not carry credentials.')
  .meta({
    description: 'An `https://` URL without credentials.',
    pattern: '^https://',
    example: 'https://crm.example.com/hooks/leadline',
  });

export const webhookParams = z.object({ webhook_id: idParam('The webhook id.') });
export const deliveryParams = webhookParams.extend({ delivery_id: idParam('The delivery id.') });

export const createWebhookBody = z
  .strictObject({
    url: webhookUrl,
    events: eventsList,
    secret: z
      .string()
      .min(16, 'Use at least 16 characters.')
      .max(256)
      .describe('Key of the HMAC-SHA256 signatures. Stored encrypted, never returned.'),
  })
  .meta({ id: 'CreateWebhookRequest' });

export const updateWebhookBody = z
  .object({
    url: webhookUrl.optional(),
    events: eventsList.optional(),
    active: z.boolean().optional().describe('`true` re-enables a webhook disabled by a 410 answer.'),
  })
  .strict()
  .meta({
    id: 'UpdateWebhookRequest',
    description: 'Any subset of url, events and active. The secret cannot change.',
  });

export const webhookResponse = z
  .object({
    id: uuid(),
    url: z.url(),
    events: z.array(z.enum(webhookEventTypes)).max(webhookEventTypes.length),
    active: z.boolean(),
    created_at: timestamp(),
  })
  .meta({ id: 'Webhook' });

export const webhookListResponse = z
  .object({ webhooks: z.array(webhookResponse).max(MAX_WEBHOOKS_PER_PARTNER) })
  .meta({ id: 'WebhookList' });
export const deleteWebhookResponse = deletedResponse;

const deliveryStatus = z.enum(['pending', 'succeeded', 'failed', 'cancelled']).meta({
  description:
    '`pending`: an attempt is scheduled at `next_attempt_at`. `succeeded`: a 2xx arrived. `failed`: ' +
    'the retries are exhausted, or the endpoint answered 410 (the `webhook.delivery_failed` entry). ' +
    '`cancelled`: the webhook was disabled or deleted before the delivery succeeded.',
});

export const listDeliveriesQuery = paginationQuery.extend({ status: deliveryStatus.optional() });

const httpStatus = z.number().int().min(100).max(599).meta({ format: 'int32' });

export const deliveryResponse = z
  .object({
    id: uuid().describe('Also sent as `X-Service-Delivery-Id`; the same on every retry.'),
    event_id: uuid(),
    event_type: z.string(),
    account_id: uuid().nullable(),
    status: deliveryStatus,
    attempt_count: count(),
    next_attempt_at: timestamp().nullable(),
    last_status_code: httpStatus.nullable(),
    last_error: z.string().nullable(),
    created_at: timestamp(),
    completed_at: timestamp().nullable(),
    attempts: z
      .array(
        z
          .object({
            attempt: count().min(1).describe('1 for the first attempt, 2 for the first retry, …'),
            attempted_at: timestamp(),
            status_code: httpStatus.nullable(),
            error: z.string().nullable(),
            duration_ms: z.number().int().min(0).max(INT32_MAX).meta({ format: 'int32' }),
            response_excerpt: z.string().nullable().describe('The first 1 KB of the answer body.'),
          })
          .meta({ id: 'DeliveryAttempt' }),
      )
      .max(10_000),
  })
  .meta({ id: 'Delivery' });

export const deliveryListResponse = z
  .object({ deliveries: z.array(deliveryResponse).max(PAGE_MAX), ...pageFields })
  .meta({ id: 'DeliveryList' });

export const queuedDeliveryResponse = z
  .object({ delivery_id: uuid(), status: z.literal('pending'), next_attempt_at: timestamp() })
  .meta({ id: 'QueuedDelivery' });
