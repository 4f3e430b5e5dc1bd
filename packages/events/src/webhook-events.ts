import { z } from 'zod';
import { registrationStatuses, registrationSteps } from './catalog/compliance';
import { leadOrigins, leadStatusSchema } from './catalog/leads';
import { messageHoldReasons } from './catalog/messaging';

/**
 * What partners receive: the nine subscribable webhook events of spec §6 (and `compliance.status_changed`,
 * `message.held`, `lead.erased` and `account.erased`, ours) and their `data` shapes.
 * These are a public contract separate from the domain events on the log (the relay maps one to the
 * other), so the log can evolve without breaking receivers. The four shapes the spec shows are exact;
 * the other spec events and `message.held` carry `phone` and `lead_name`, plus what the event is about
 * (our design); the erasures carry nothing personal.
 */
export const webhookEventTypes = [
  'conversation.started',
  'conversation.reply_received',
  'conversation.handoff_requested',
  'lead.status_changed',
  'lead.created',
  'checklist.item_collected',
  'checklist.completed',
  'sequence.completed',
  'sequence.reply_received',
  'compliance.status_changed',
  'message.held',
  'lead.erased',
  'account.erased',
] as const;
export type WebhookEventType = (typeof webhookEventTypes)[number];

const phone = z
  .string()
  .regex(/^\+[1-9]\d{1,14}$/)
  .meta({ description: 'The lead phone number, E.164.', example: '+15125550123' });
const timestamp = z.iso.datetime({ offset: true });
const count = z.number().int().min(0).max(2_147_483_647);
const leadName = z
  .string()
  .nullable()
  .meta({ description: "The lead's `name`, else first and last name joined, else null." });
const messageDirection = z.enum(['inbound', 'outbound']);
const progress = z.number().min(0).max(1).meta({ description: 'Fraction of items collected, 0 to 1.' });

export const webhookEventData = {
  'conversation.started': z.strictObject({
    phone,
    lead_name: leadName,
    message_body: z.string().meta({ description: 'The first message exchanged.' }),
    message_direction: messageDirection,
    message_source: z
      .enum(['sequence', 'ai', 'manual'])
      .nullable()
      .meta({ description: 'Who sent the first message when outbound; null when inbound.' }),
  }),
  'conversation.reply_received': z.strictObject({
    phone,
    lead_name: leadName,
    message_body: z.string(),
    message_direction: messageDirection,
  }),
  'conversation.handoff_requested': z.strictObject({ phone, lead_name: leadName, reason: z.string() }),
  'lead.status_changed': z.strictObject({
    phone,
    lead_name: leadName,
    previous_status: leadStatusSchema,
    new_status: leadStatusSchema,
  }),
  'lead.created': z.strictObject({
    phone,
    lead_name: leadName,
    first_name: z.string().nullable(),
    last_name: z.string().nullable(),
    email: z.string().nullable(),
    company: z.string().nullable(),
    source: z.string().nullable(),
    external_id: z.string().nullable(),
    status: leadStatusSchema,
    origin: z
      .enum(leadOrigins)
      .meta({ description: 'Imported one at a time (`api`), in bulk, or created by an inbound message.' }),
    metadata: z.record(z.string(), z.unknown()),
  }),
  'checklist.item_collected': z.strictObject({
    phone,
    lead_name: leadName,
    requirement_id: z.uuid(),
    requirement_name: z.string(),
    requirement_type: z.enum(['document', 'text', 'email', 'phone', 'number', 'date']),
    value: z.string().nullable().meta({ description: 'The collected value; null for a document.' }),
    file_url: z.url().nullable().meta({ description: 'Signed URL of a document; null otherwise.' }),
    collected_at: timestamp,
    checklist_progress: progress,
  }),
  'checklist.completed': z.strictObject({
    phone,
    lead_name: leadName,
    checklist_progress: progress,
    completed_items: count,
    total_items: count,
  }),
  'sequence.completed': z.strictObject({
    phone,
    lead_name: leadName,
    sequence_id: z.uuid(),
    sequence_name: z.string(),
    total_steps: count,
  }),
  'sequence.reply_received': z.strictObject({
    phone,
    lead_name: leadName,
    sequence_id: z.uuid(),
    sequence_name: z.string(),
    current_step: count.meta({ description: '0-based step the lead replied after.' }),
    message_body: z.string(),
  }),
  'compliance.status_changed': z.strictObject({
    account_id: z.uuid().meta({ description: 'The account whose carrier registration moved on.' }),
    step: z.enum(registrationSteps).meta({
      description:
        'The business profile, the brand, the campaign, or the number joining the campaign (in that order).',
    }),
    previous_status: z.enum(registrationStatuses),
    new_status: z.enum(registrationStatuses),
    reason: z
      .string()
      .nullable()
      .meta({ description: "The carrier's reason when `new_status` is `failed`; null otherwise." }),
  }),
  'message.held': z.strictObject({
    phone,
    lead_name: leadName,
    message_id: z.uuid().meta({ description: 'The held message, as GET .../messages lists it.' }),
    reason: z.enum(messageHoldReasons).meta({
      description:
        'Why the message waits; the `MessageHold` schema of the messages list says what each means.',
    }),
    next_attempt_at: timestamp.nullable().meta({
      description:
        "When the SMS gateway decides again; null when it waits for an event instead, such as the campaign's approval.",
    }),
  }),
  // No phone and no name: the partner knows the lead by its id, and the delivery log, which keeps
  // payloads, must hold nothing of the person it reports erased.
  'lead.erased': z.strictObject({
    lead_id: z.uuid().nullable().meta({
      description: 'The erased lead; null when the number had no lead any more (its conversation only).',
    }),
    erased_at: timestamp.meta({ description: 'When the person was erased.' }),
  }),
  // The account is named by the envelope's `account_id`; nothing of anyone it held.
  'account.erased': z.strictObject({
    erased_at: timestamp.meta({
      description: 'When the account was erased: the first erasure, the same for a repeated request.',
    }),
    leads_erased: count.meta({
      description:
        'People erased with the account so far, each a phone it held (its leads, and numbers that only ' +
        'texted it); a `lead.erased` webhook came for each before this one.',
    }),
  }),
} satisfies Record<WebhookEventType, z.ZodType>;

export type WebhookEventData<T extends WebhookEventType> = z.infer<(typeof webhookEventData)[T]>;

/** Sent only by POST /webhooks/:webhook_id/test; never on a subscription. */
export const webhookTestEventType = 'webhook.test';
export const webhookTestData = z.strictObject({ webhook_id: z.uuid(), message: z.string() });

/** The envelope of every delivery (spec §6). `account_id` is null only on the test event. */
export function webhookEnvelopeSchema<const T extends string, D extends z.ZodType>(type: T, data: D) {
  return z.strictObject({
    id: z.uuid().meta({ description: 'Event id: the same for every webhook and every retry.' }),
    type: z.literal(type),
    account_id: type === webhookTestEventType ? z.uuid().nullable() : z.uuid(),
    created_at: timestamp.meta({ description: 'When the event happened, ISO 8601 UTC.' }),
    data,
  });
}

export type WebhookEnvelope = {
  [T in WebhookEventType]: {
    id: string;
    type: T;
    account_id: string;
    created_at: string;
    data: WebhookEventData<T>;
  };
}[WebhookEventType];
