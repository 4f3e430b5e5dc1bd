import {
  webhookEnvelopeSchema,
  webhookEventData,
  webhookEventTypes,
  webhookTestData,
  webhookTestEventType,
} from '@leadline/events';
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import type { z } from 'zod';

const hexDigest = { type: 'string' as const, pattern: '^[0-9a-f]{64}$', maxLength: 64 };
const deliveryHeaders: [string, string, { type: 'string'; [keyword: string]: unknown }][] = [
  [
    'X-Service-Delivery-Id',
    'The delivery: the same on every retry of it. Deduplicate on it.',
    { type: 'string', format: 'uuid', maxLength: 36 },
  ],
  ['X-Service-Event-Type', 'The event type, also in the body.', { type: 'string', maxLength: 100 }],
  [
    'X-Service-Timestamp',
    'When this attempt was signed, in Unix seconds.',
    { type: 'string', pattern: '^[0-9]{1,12}$', maxLength: 12 },
  ],
  [
    'X-Service-Signature',
    'Hex HMAC-SHA256 of the exact body bytes, keyed with the webhook secret.',
    hexDigest,
  ],
  [
    'X-Service-Timestamped-Signature',
    'Hex HMAC-SHA256 of `<X-Service-Timestamp>.<body>`: refuse it when the timestamp is more than ' +
      'five minutes from your clock, and replays are refused too.',
    hexDigest,
  ],
];

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
  'compliance.status_changed':
    "A step of an account's carrier registration (business profile, brand, campaign, number) changes status.",
  'message.held':
    'The SMS gateway holds an outbound message it may still send (the carrier registration is pending, ' +
    "the lead's quiet hours or state rules, the brand's daily cap): the message stays `queued`, with the " +
    'reason in its `held` field. Sent when a message is first held, and again when the reason changes.',
  'lead.erased':
    'A person was erased on request (POST /accounts/{id}/leads/{phone}/erase): forget what you keep of the ' +
    'lead. Carries the lead id only, never the phone or the name.',
  'account.erased':
    'An account was erased on request (POST /accounts/{id}/erase): every person it held was erased (a ' +
    '`lead.erased` each came first) and the account is deactivated; forget what you keep of its leads.',
  [webhookTestEventType]: 'Sent only by POST /webhooks/{webhook_id}/test.',
};

type OpenApiWebhooks = NonNullable<
  Extract<NonNullable<FastifyDynamicSwaggerOptions['openapi']>, { webhooks?: unknown }>['webhooks']
>;

/** `lead.status_changed` → `LeadStatusChangedEvent`: the component name of a payload. */
const componentName = (type: string) =>
  `${type
    .split(/[._]/)
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join('')}Event`;

// Named once, at load: each payload is a component of the document, referred to by its webhook.
const events = [
  ...webhookEventTypes.map((type) => [type, webhookEventData[type]] as [string, z.ZodType]),
  [webhookTestEventType, webhookTestData] as [string, z.ZodType],
].map(([type, data]) => {
  const id = componentName(type);
  // The data too: an unnamed object would get a name each generator makes up.
  webhookEnvelopeSchema(type, data.meta({ id: `${id}Data` })).meta({ id, description: descriptions[type] });
  return [type, id] as const;
});

/** One OpenAPI 3.1 `webhooks` entry per event a partner can receive, its payload a named schema. */
export function webhookEventsDocumentation(): OpenApiWebhooks {
  return Object.fromEntries<OpenApiWebhooks[string]>(
    events.map(([type, id]) => [
      type,
      {
        post: {
          operationId: `receive${id}`,
          summary: type,
          // Not `Webhooks`: generators write one API class per tag, and the payloads' class would replace
          // the one holding the webhook-management operations.
          tags: ['Webhook events'],
          description: `${descriptions[type]} Answer 2xx within 10 seconds; anything else is retried.`,
          parameters: deliveryHeaders.map(([name, description, schema]) => ({
            name,
            in: 'header' as const,
            required: true,
            description,
            schema,
          })),
          requestBody: {
            required: true,
            content: {
              'application/json': { schema: { $ref: `#/components/schemas/${id}` } },
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
