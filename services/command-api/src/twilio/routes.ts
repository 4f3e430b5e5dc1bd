import fastifyFormbody from '@fastify/formbody';
import { cleanForm } from '@leadline/events';
import { validTwilioSignature, deliveryStatusOf } from '@leadline/telephony';
import { DomainError, notFound } from '@leadline/runtime';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { normalizePhone } from '@leadline/domain';
import type { AppDeps } from '../app-deps';
import { acceptInboundSms } from './inbound';
import { registrationCallbackRoutes } from './registration-callback';
import { inboundSmsForm, mediaOf, statusCallbackForm, statusCallbackQuery } from './schemas';

const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>';

/**
 * Twilio's own limit on a message's text. A longer `Body` never came from a phone through Twilio; it
 * is kept to its first 1,600 characters, so no one's input costs every account's AI turns more than a
 * real message can.
 */
export const MAX_INBOUND_BODY_CHARS = 1600;
/** A whole inbound form (its text, ten media URLs, Twilio's other fields) is a few KB. */
const INBOUND_FORM_MAX_BYTES = 64 * 1024;

/** The first `max` characters (code points, so no emoji is cut in half). */
function firstChars(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = 0;
  for (let count = 0; count < max && end < text.length; count++) {
    end += text.codePointAt(end)! > 0xffff ? 2 : 1;
  }
  return text.slice(0, end);
}

/**
 * Twilio's webhooks: inbound SMS/MMS, message status callbacks and Trust Hub's registration status
 * callbacks, outside /v1 and not part of the
 * partner API. Whenever TWILIO_AUTH_TOKEN is set, `X-Twilio-Signature` must be Twilio's signature of
 * the public URL and the form fields; anything else is a 403 that stores nothing.
 */
export const twilioRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const { db, commands, twilioAuthToken } = deps;
  const publicUrl = deps.publicUrl.replace(/\/$/, '');
  await app.register(fastifyFormbody);

  if (twilioAuthToken) {
    app.addHook('preValidation', async (request: FastifyRequest) => {
      const signature = request.headers['x-twilio-signature'];
      const params = (request.body ?? {}) as Record<string, string>;
      if (
        !validTwilioSignature(
          twilioAuthToken,
          typeof signature === 'string' ? signature : undefined,
          publicUrl + request.url,
          params,
        )
      ) {
        throw new DomainError(403, 'invalid_signature', 'X-Twilio-Signature does not match this request.');
      }
    });
  }

  // Registered after the signature check, which it inherits.
  await app.register(registrationCallbackRoutes, deps);

  app.post(
    '/twilio/sms',
    { schema: { hide: true, body: inboundSmsForm }, bodyLimit: INBOUND_FORM_MAX_BYTES },
    async (request, reply) => {
      // Text from phones is never refused: what a projection cannot store is cleaned (after the signature check).
      const form = cleanForm(request.body);
      const phone = normalizePhone(form.From);
      if (phone === undefined) {
        // A short code or an alphanumeric sender (a bank's codes, a carrier's notices) is not a person
        // who can become a lead: nothing can be sent back to it, and no lead route could address it.
        // Twilio gets its answer, so it does not retry; nothing is stored or sent.
        request.log.info(
          { from: form.From, message_sid: form.MessageSid },
          'inbound SMS from a non-phone sender ignored',
        );
        return reply.type('text/xml').send(EMPTY_TWIML);
      }
      const body = firstChars(form.Body, MAX_INBOUND_BODY_CHARS);
      if (body !== form.Body) {
        request.log.warn(
          { message_sid: form.MessageSid, characters: form.Body.length },
          `inbound SMS body over ${MAX_INBOUND_BODY_CHARS} characters kept to its first ${MAX_INBOUND_BODY_CHARS}`,
        );
      }
      // Kept as a raw fact and answered at once; the inbound decider does the rest (see inbound.ts).
      await acceptInboundSms(deps, {
        phone,
        to: normalizePhone(form.To) ?? form.To,
        body,
        provider_message_id: form.MessageSid,
        media: mediaOf(form, form.NumMedia),
      });
      return reply.type('text/xml').send(EMPTY_TWIML);
    },
  );

  app.post(
    '/twilio/status',
    { schema: { hide: true, body: statusCallbackForm, querystring: statusCallbackQuery } },
    async (request, reply) => {
      const { MessageSid, MessageStatus, ErrorCode, To } = cleanForm(request.body);
      const query = cleanForm(request.query);
      const status = deliveryStatusOf(MessageStatus);
      const message = await statusTarget(query, MessageSid, To);
      if (!message) throw notFound('message');
      if (status) {
        // A plain fact: appended without waiting for the projector, so a lagging projector never
        // turns a delivery report into an error Twilio gives up on.
        await commands.append({
          stream: { topic: 'account', accountId: message.account_id },
          context: {
            partnerId: message.partner_id,
            actor: { kind: 'system', service: 'twilio-status' },
            correlationId: message.id,
          },
          events: [
            {
              type: 'message.status_updated',
              data: {
                message_id: message.id,
                phone: message.phone,
                provider_message_id: MessageSid,
                status,
                provider_status: MessageStatus,
                error_code: ErrorCode ?? null,
              },
            },
          ],
          readYourWrites: false,
        });
      }
      return reply.type('text/xml').send(EMPTY_TWIML);
    },
  );

  /**
   * The message a callback reports on. The URL we gave Twilio names our message and its account (the
   * signature covers both), and the callback names the recipient: nothing to wait for. A callback
   * without them (a URL given before accounts were named in it) is found by its SID in the read model.
   */
  async function statusTarget(
    query: { message_id?: string | undefined; account_id?: string | undefined },
    messageSid: string,
    to: string | undefined,
  ) {
    const phone = to && (normalizePhone(to) ?? to);
    if (query.message_id && query.account_id && phone) {
      const account = await db
        .selectFrom('accounts')
        .select(['id', 'partner_id'])
        .where('id', '=', query.account_id)
        .executeTakeFirst();
      if (account)
        return { id: query.message_id, phone, account_id: account.id, partner_id: account.partner_id };
    }
    return db
      .selectFrom('messages')
      .innerJoin('accounts', 'accounts.id', 'messages.account_id')
      .select(['messages.id', 'messages.phone', 'messages.account_id', 'accounts.partner_id'])
      .where((eb) =>
        query.message_id
          ? eb('messages.id', '=', query.message_id)
          : eb('messages.provider_message_id', '=', messageSid),
      )
      .executeTakeFirst();
  }
};
