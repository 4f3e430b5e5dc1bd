import { deliveryStatuses, leadStatuses, messageHoldReasons, messageSources } from '@leadline/events';
import { z } from 'zod';
import { count, e164, idParam, PAGE_MAX, timestamp, uuid } from '../http/fields';
import { pageFields, paginationQuery } from '../http/pagination';
import { phoneNumberSchema } from '../http/phone';

export const conversationParams = z.object({
  id: idParam('The account id.'),
  phone: phoneNumberSchema.describe('The lead phone: `%2B15125550123`, `+15125550123` or `5125550123`.'),
});

export const listConversationsQuery = paginationQuery.extend({
  needs_handoff: z
    .enum(['true', 'false'])
    .transform((value) => value === 'true')
    .optional()
    .describe('Only conversations flagged for a human (`true`) or not flagged (`false`).'),
});

export const conversationListResponse = z
  .object({
    conversations: z
      .array(
        z
          .object({
            phone: e164(),
            name: z
              .string()
              .nullable()
              .describe("The lead's name; null when unknown or the lead was deleted."),
            preview: z.string().describe('The latest message, cut at 160 characters.'),
            last_message_at: timestamp(),
            message_count: count(),
            needs_handoff: z.boolean(),
            lead_status: z.enum(leadStatuses).nullable().describe('Null when the lead was deleted.'),
            in_sequence: z.boolean(),
            opted_out: z
              .boolean()
              .describe(
                'The number opted out (STOP, or asked in words not to be contacted); nothing can be sent to it.',
              ),
            ai_paused: z
              .boolean()
              .describe('A manual message paused the AI; resume-ai or the timeout ends it.'),
            ai_paused_until: timestamp()
              .nullable()
              .describe('When the pause ends by itself; null when not paused.'),
          })
          .meta({ id: 'Conversation' }),
      )
      .max(PAGE_MAX),
    ...pageFields,
  })
  .meta({ id: 'ConversationList' });

/** What each hold reason means to a partner, in the order of `messageHoldReasons`. */
const holdReasonDocs: Record<(typeof messageHoldReasons)[number], string> = {
  registration_pending:
    "the account's carrier registration (A2P 10DLC campaign) is not approved yet and its number is a US long code (the message goes once the campaign is approved)",
  quiet_hours: "a sequence step outside the account's sending window for the lead (quiet hours)",
  state_hours: "a sequence step outside the hours the lead's state allows for telemarketing texts",
  state_sunday: "a sequence step on a Sunday, when the lead's state restricts texts",
  state_holiday: "a sequence step on a holiday on which the lead's state restricts texts",
  brand_daily_cap:
    "the carriers' daily cap for the account's brand is reached (the message goes on the carriers' next day)",
};

export const messageHoldSchema = z
  .object({
    reason: z
      .enum(messageHoldReasons)
      .describe(
        `Why the message waits: ${messageHoldReasons.map((reason) => `\`${reason}\`: ${holdReasonDocs[reason]}`).join('; ')}.`,
      ),
    until: timestamp()
      .nullable()
      .describe(
        "When the SMS gateway decides again (it checks every rule again then: opt-out, sending window, queue age); null when it waits for an event instead, such as the campaign's approval. The time given when the hold was recorded: a message held again for the same reason (the next night's window) keeps it.",
      ),
  })
  .meta({
    id: 'MessageHold',
    description:
      'Why the SMS gateway holds a queued outbound message it may still send. The message stays `queued` while held; the hold is gone once it is sent or fails. The `message.held` webhook reports each hold.',
  });

export const messageListResponse = z
  .object({
    messages: z
      .array(
        z
          .object({
            id: uuid(),
            direction: z.enum(['inbound', 'outbound']),
            body: z.string(),
            content_expired: z
              .boolean()
              .describe(
                "The account's `retention_days` passed for this message's UTC day: its body and media are gone (`body` is empty, `media` is empty); its time, direction and status stay.",
              ),
            sent_at: timestamp().describe('When the message was received, or requested for an outbound one.'),
            source: z
              .enum(messageSources)
              .optional()
              .describe('Outbound only. `system` marks the compliance replies to opt-outs, START and HELP.'),
            sender_name: z
              .string()
              .nullable()
              .optional()
              .describe('Outbound only: who wrote a manual message.'),
            status: z
              .enum(['received', ...deliveryStatuses])
              .describe('`received` for inbound messages; the delivery status of an outbound one.'),
            held: messageHoldSchema
              .nullable()
              .describe(
                'Why a `queued` outbound message waits; null when it is not held (always for inbound messages).',
              ),
            media: z
              .array(
                z
                  .object({
                    url: z
                      .url()
                      .nullable()
                      .describe(
                        "A signed, expiring link to the stored file; null until the file is downloaded. Never the provider's own URL.",
                      ),
                    content_type: z.string().nullable(),
                  })
                  .meta({ id: 'MessageMedia' }),
              )
              .max(10)
              .optional()
              .describe('Inbound only: the MMS attachments.'),
          })
          .meta({ id: 'Message' }),
      )
      .max(PAGE_MAX),
    ...pageFields,
  })
  .meta({ id: 'MessageList' });

export const sendMessageBody = z
  .strictObject({
    body: z.string().trim().min(1, 'Must not be empty.').max(1600),
    sender_name: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .optional()
      .describe('Display name of the person sending, for internal tracking.'),
  })
  .meta({ id: 'SendMessageRequest' });

export const sendMessageResponse = z
  .object({
    success: z.literal(true),
    message_id: uuid(),
    direction: z.literal('outbound'),
    source: z.literal('manual'),
  })
  .meta({ id: 'SentMessage' });

/** A command without fields: no body or `{}`; anything in it is an unknown field, a 400. */
export const emptyBody = z
  .strictObject({})
  .meta({ id: 'EmptyBody', description: 'No fields: send no body, or `{}`.' })
  .optional();

export const resumeAiResponse = z
  .object({ success: z.literal(true), ai_enabled: z.literal(true) })
  .meta({ id: 'AiResumed' });
