import { z } from 'zod';
import { defineEvent } from '../define';
import { sequenceStepRefSchema } from './sequences';

/**
 * Messages and conversations. A conversation is keyed by (account, lead phone) and outlives the lead:
 * deleting a lead keeps its history, and its opt-out (which belongs to the phone number, as carriers
 * and the TCPA see it) stays in force if the lead is imported again.
 */

export const messageSources = ['manual', 'sequence', 'ai', 'system'] as const;
/** The keywords a compliance reply (`source: system`) answers. */
export const complianceAnswers = ['opt_out', 'opt_in', 'help'] as const;
export const deliveryStatuses = ['queued', 'sent', 'delivered', 'undelivered', 'failed'] as const;

const mediaSchema = z.object({ url: z.string(), content_type: z.string().nullable() });

/** An SMS/MMS from `phone` to the account's number, as Twilio (or the local provider) reported it. */
export const messageReceived = defineEvent('message.received', {
  topic: 'account',
  data: z.object({
    message_id: z.string(),
    phone: z.string(),
    /** The account's number the message was sent to. */
    to: z.string(),
    body: z.string(),
    provider_message_id: z.string(),
    /** References only; fetching the files (with account credentials) comes with the AI agent. */
    media: z.array(mediaSchema),
  }),
});

/**
 * What Twilio posted to our inbound webhook, kept before anything is decided about it: the inbound
 * decider turns it, in order per account, into `message.received` (and the lead, keywords, replies)
 * unless its `provider_message_id` was already stored. A raw fact may appear twice on the log (a
 * retried webhook); it is decided once. `phone` and `to` are normalized when they are phone numbers
 * (short codes and alphanumeric senders are kept as given).
 */
export const messageInboundReceived = defineEvent('message.inbound_received', {
  topic: 'account',
  data: z.object({
    phone: z.string(),
    to: z.string(),
    body: z.string(),
    /** Twilio's MessageSid. */
    provider_message_id: z.string(),
    media: z.array(mediaSchema),
  }),
});

/**
 * A message to send to `phone`; the SMS gateway sends it at most once. `system` messages are the
 * compliance replies to STOP, START and HELP, the only ones sent to a number that opted out.
 */
export const messageOutboundRequested = defineEvent('message.outbound_requested', {
  topic: 'account',
  data: z.object({
    message_id: z.string(),
    phone: z.string(),
    body: z.string(),
    source: z.enum(messageSources),
    /** Who wrote a manual message, for internal tracking. */
    sender_name: z.string().nullable(),
    /** The sequence step this message carries out, for messages with `source: sequence`. */
    sequence_step: sequenceStepRefSchema.optional(),
    /**
     * For a `system` message, the keyword it answers: the confirmation of an opt-out (`opt_out`) or of an
     * opt-in (`opt_in`), or the answer to HELP. Absent on requests from before it was recorded.
     */
    answers: z.enum(complianceAnswers).optional(),
  }),
});

/**
 * Why the gateway holds a message it may send later: `registration_pending` (the account's campaign is
 * not approved by the carriers yet, and the number is a US long code), the lead's sending window
 * (`quiet_hours`, or the lead's state's `state_hours`, `state_sunday`, `state_holiday`) for a sequence
 * step that could not leave before the window closed, or `brand_daily_cap` (the brand's carrier cap for
 * the day is reached).
 */
export const messageHoldReasons = [
  'registration_pending',
  'quiet_hours',
  'state_hours',
  'state_sunday',
  'state_holiday',
  'brand_daily_cap',
] as const;

/**
 * The gateway holds the message instead of sending it now, for `reason`; it is decided again at
 * `next_attempt_at` (null: when the reason lifts, such as the campaign's approval), checked again against
 * every rule (opt-out, sending window, queue age) when it goes. Recorded when a message is first held,
 * and again only when the reason changes.
 */
export const messageHeld = defineEvent('message.held', {
  topic: 'account',
  data: z.object({
    message_id: z.string(),
    phone: z.string(),
    reason: z.enum(messageHoldReasons),
    next_attempt_at: z.iso.datetime().nullable(),
  }),
});

/** The provider accepted the message. */
export const messageSent = defineEvent('message.sent', {
  topic: 'account',
  data: z.object({
    message_id: z.string(),
    phone: z.string(),
    provider_message_id: z.string(),
    status: z.enum(deliveryStatuses),
  }),
});

export const messageFailureReasons = [
  'lead_opted_out',
  'account_deactivated',
  'provider_rejected',
  'provider_error',
  'send_unconfirmed',
  /**
   * A manual or compliance message that waited in the queue longer than the gateway allows (an opt-out
   * confirmation: five minutes after the opt-out).
   */
  'expired',
] as const;

/** The message was not sent (refused by the gateway or the provider) or its fate is unknown. */
export const messageFailed = defineEvent('message.failed', {
  topic: 'account',
  data: z.object({
    message_id: z.string(),
    phone: z.string(),
    reason: z.enum(messageFailureReasons),
    error_code: z.string().nullable(),
    error_message: z.string().nullable(),
  }),
});

/** A delivery report (Twilio's status callback). Reports may arrive out of order or twice. */
export const messageStatusUpdated = defineEvent('message.status_updated', {
  topic: 'account',
  data: z.object({
    message_id: z.string(),
    phone: z.string(),
    provider_message_id: z.string(),
    status: z.enum(deliveryStatuses),
    /** The provider's own status word (`accepted`, `sending`, `read`...). */
    provider_status: z.string(),
    error_code: z.string().nullable(),
  }),
});

const leadRef = {
  phone: z.string(),
  /** Null when the lead was deleted; the conversation outlives it. */
  lead_id: z.string().nullable(),
  lead_name: z.string().nullable(),
};

/** The first message exchanged with this phone, in either direction. */
export const conversationStarted = defineEvent('conversation.started', {
  topic: 'account',
  data: z.object({
    ...leadRef,
    message_id: z.string(),
    direction: z.enum(['inbound', 'outbound']),
    message_body: z.string(),
    /** Who sent the first message when it was outbound; null when the lead texted first. */
    message_source: z.enum(['manual', 'sequence', 'ai', 'system']).nullable(),
  }),
});

/** A lead sent a message: what the partner's `conversation.reply_received` webhook carries. */
export const conversationReplyReceived = defineEvent('conversation.reply_received', {
  topic: 'account',
  data: z.object({
    ...leadRef,
    message_id: z.string(),
    message_body: z.string(),
    message_direction: z.literal('inbound'),
  }),
});

/** The AI stays quiet in this conversation until resumed or until `paused_until`. */
export const conversationAiPaused = defineEvent('conversation.ai_paused', {
  topic: 'account',
  data: z.object({
    phone: z.string(),
    paused_until: z.iso.datetime(),
    reason: z.enum(['manual_message']),
  }),
});

export const conversationAiResumed = defineEvent('conversation.ai_resumed', {
  topic: 'account',
  data: z.object({ phone: z.string() }),
});

/** The AI asked for a human. */
export const conversationHandoffRequested = defineEvent('conversation.handoff_requested', {
  topic: 'account',
  data: z.object({ ...leadRef, reason: z.string() }),
});

/** A human took over: a manual message or resume-ai clears the handoff flag. */
export const conversationHandoffCleared = defineEvent('conversation.handoff_cleared', {
  topic: 'account',
  data: z.object({ phone: z.string(), reason: z.enum(['manual_message', 'ai_resumed']) }),
});

/**
 * The phone revoked its consent: nothing but compliance replies goes to it any more. However it asked:
 * an opt-out keyword, a request in words the rules recognise (`free_text`), or one the AI's model
 * recognised (`ai`, its `reason` kept). `method` and `reason` came later: an event without `method` is a
 * keyword.
 */
export const leadOptedOut = defineEvent('lead.opted_out', {
  topic: 'account',
  data: z.object({
    ...leadRef,
    /** The keyword as listed (`STOP`, `OPTOUT`…), the free-text rule that matched, or `AI`. */
    keyword: z.string(),
    /** The inbound message that revoked consent (for `ai`, the last of the burst the model read). */
    message_id: z.string(),
    method: z.enum(['keyword', 'free_text', 'ai']).optional(),
    /** For `ai`: why the model judged the message a revocation. */
    reason: z.string().optional(),
  }),
});

export const leadOptedIn = defineEvent('lead.opted_in', {
  topic: 'account',
  data: z.object({ ...leadRef, keyword: z.string(), message_id: z.string() }),
});
