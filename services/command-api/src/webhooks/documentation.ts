import {
  webhookEnvelopeSchema,
  webhookEventData,
  webhookEventTypes,
  webhookTestData,
  webhookTestEventType,
} from '@leadline/events';
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { z } from 'zod';

const deliveryHeaders = [
  ['X-Service-Delivery-Id', 'The delivery: the same on every retry of it. Deduplicate on it.'],
  ['X-Service-Event-Type', 'The event type, also in the body.'],
  ['X-Service-Timestamp', 'When this attempt was signed, in Unix seconds.'],
  ['X-Service-Signature', 'Hex HMAC-SHA256 of the exact body bytes, keyed with the webhook secret.'],
  [
    'X-Service-Timestamped-Signature',
    'Hex HMAC-SHA256 of `<X-Service-Timestamp>.<body>`: refuse it when the timestamp is more than ' +
      'five minutes from your clock, and replays are refused too.',
  ],
] as const;

const descriptions: Record<string, string> = {
  'conversation.started': 'The first message is exchanged with a new lead.',
  'conversation.reply_received': 'A lead sends an inbound message.',
  'conversation.handoff_requested': 'The AI flags a conversation for human review.',
  'lead.status_changed': 'A lead status changes.',
  'lead.created': 'A new lead is imported through the API or created from a conversation.',
  'checklist.item_collected': 'A document or data point is collected.',
  'checklist.completed': 'All required checklist items are collected.',
  'sequence.completed': 'A lead finishes all sequence steps.',
  'sequence.reply_received': 'A lead replies during an active sequence.',
  [webhookTestEventType]: 'Sent only by POST /webhooks/{webhook_id}/test.',
};

type OpenApiWebhooks = NonNullable<
  Extract<NonNullable<FastifyDynamicSwaggerOptions['openapi']>, { webhooks?: unknown }>['webhooks']
>;

/** One OpenAPI 3.1 `webhooks` entry per event a partner can receive, with its JSON Schema. */
export function webhookEventsDocumentation(): OpenApiWebhooks {
  const events: [string, z.ZodType][] = [
    ...webhookEventTypes.map((type) => [type, webhookEventData[type]] as [string, z.ZodType]),
    [webhookTestEventType, webhookTestData],
  ];
  return Object.fromEntries<OpenApiWebhooks[string]>(
    events.map(([type, data]) => [
      type,
      {
        post: {
          summary: type,
          description: `${descriptions[type]} Answer 2xx within 10 seconds; anything else is retried.`,
          parameters: deliveryHeaders.map(([name, description]) => ({
            name,
            in: 'header' as const,
            required: true,
            description,
            schema: { type: 'string' },
          })),
          requestBody: {
            required: true,
            content: {
              'application/json': { schema: z.toJSONSchema(webhookEnvelopeSchema(type, data)) as object },
            },
          },
          responses: {
            '2XX': { description: 'Received. Any other answer, a timeout or a redirect is a failure.' },
            '410': { description: 'Gone: the webhook is disabled and receives nothing more.' },
          },
        },
      },
    ]),
  );
}
