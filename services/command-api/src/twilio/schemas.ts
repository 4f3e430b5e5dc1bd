import { z } from 'zod';

/** Twilio's inbound SMS/MMS webhook form (only the fields we use; every field is signed). */
export const inboundSmsForm = z
  .object({
    From: z.string().min(1),
    To: z.string().min(1),
    Body: z.string().default(''),
    MessageSid: z.string().min(1),
    NumMedia: z.coerce.number().int().min(0).max(10).default(0),
  })
  .catchall(z.string());

/** Twilio's message status callback form. */
export const statusCallbackForm = z
  .object({
    MessageSid: z.string().min(1),
    MessageStatus: z.string().min(1),
    ErrorCode: z.string().optional(),
    /** The recipient: with `account_id` in the URL, the report needs no read model. */
    To: z.string().optional(),
  })
  .catchall(z.string());

/** What we put in the status callback URL: our message and its account. */
export const statusCallbackQuery = z.object({
  message_id: z.string().min(1).max(100).optional(),
  account_id: z.string().min(1).max(100).optional(),
});

/** The MMS attachments of an inbound message: MediaUrlN with MediaContentTypeN, N < NumMedia. */
export function mediaOf(form: Record<string, string | number>, count: number) {
  return Array.from({ length: count }, (_, index) => ({
    url: String(form[`MediaUrl${index}`] ?? ''),
    content_type:
      form[`MediaContentType${index}`] === undefined ? null : String(form[`MediaContentType${index}`]),
  })).filter((media) => media.url !== '');
}
