import { eventually, fakeClock, startFakeTwilio, twilioSignature, type FakeTwilio } from '@leadline/test-kit';
import { afterAll, beforeAll } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

/** What the messaging tests share: the system, Twilio's requests to it, an account, and its messages as the API lists them. */
export let system: TestSystem;
export let twilio: FakeTwilio;
export let acme: PartnerClient;
export let acmeKey: string;
export let other: PartnerClient;
export const clock = fakeClock();

/**
 * The system with the fake Twilio and the SMS gateway, and two partners (Acme CRM and Other CRM), on
 * this file's own database and topics.
 */
export function useMessagingSystem() {
  beforeAll(async () => {
    twilio = await startFakeTwilio();
    system = await startSystem({ clock, twilio, gateway: true });
    acmeKey = await system.createPartner('Acme CRM');
    acme = partnerClient(system.app, acmeKey);
    other = partnerClient(system.app, await system.createPartner('Other CRM'));
  });
  afterAll(async () => {
    await system?.close();
    await twilio?.close();
  });
}

let sids = 0;
export const nextSid = () => `SM${String(++sids).padStart(32, '0')}`;

/** Posts a Twilio webhook form, signed as Twilio signs it (or with the given signature). */
export async function postTwilio(path: string, params: Record<string, string>, signature?: string) {
  const url = `${system.publicUrl}${path}`;
  const response = await system.app.inject({
    method: 'POST',
    url: path,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': signature ?? twilioSignature(twilio.authToken, url, params),
    },
    payload: new URLSearchParams(params).toString(),
  });
  return { status: response.statusCode, body: response.body, type: response.headers['content-type'] };
}

export function inboundSms(to: string, from: string, body: string, extra: Record<string, string> = {}) {
  return postTwilio('/twilio/sms', {
    MessageSid: extra.MessageSid ?? nextSid(),
    AccountSid: twilio.accountSid,
    From: from,
    To: to,
    Body: body,
    NumMedia: '0',
    ...extra,
  });
}

export async function newAccount(fields: Record<string, unknown> = {}) {
  const { body } = await acme.post('/accounts', { name: 'Sunrise Mortgage', ...fields });
  return { id: body.id as string, number: body.phone_number as string };
}

/** Waits until the SMS gateway has sent (or refused) the message and recorded it. */
export const settledByGateway = (messageId: string) =>
  eventually(async () => {
    const row = await system.services.db
      .selectFrom('sms_outbox')
      .select('state')
      .where('message_id', '=', messageId)
      .executeTakeFirst();
    return row?.state === 'sent' || row?.state === 'failed' ? row.state : undefined;
  });

export const messagesOf = async (accountId: string, phone: string) =>
  (await acme.get(`/accounts/${accountId}/conversations/${encodeURIComponent(phone)}/messages`)).body;
export const conversationOf = async (accountId: string, phone: string) =>
  (await acme.get(`/accounts/${accountId}/conversations`)).body.conversations.find(
    (conversation: { phone: string }) => conversation.phone === phone,
  );
