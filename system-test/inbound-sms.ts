import { newUuid } from '@leadline/runtime';
import { twilioSignature, type FakeTwilio } from '@leadline/test-kit';
import type { TestSystem } from './system';

export interface InboundSms {
  to: string;
  from: string;
  body: string;
  /** Twilio's MessageSid; a fresh one by default. */
  sid?: string;
}

/**
 * Posts an SMS to the API's Twilio webhook as Twilio does: form-encoded, and signed with the account's
 * auth token when `twilio` is given (a system started with Twilio checks signatures; one without
 * takes them unsigned). Returns the API's answer to Twilio.
 */
export function postInboundSms(
  system: Pick<TestSystem, 'app' | 'publicUrl'>,
  { to, from, body, sid = `SM${newUuid().replaceAll('-', '')}` }: InboundSms,
  twilio?: Pick<FakeTwilio, 'accountSid' | 'authToken'>,
) {
  const params: Record<string, string> = {
    MessageSid: sid,
    ...(twilio && { AccountSid: twilio.accountSid }),
    From: from,
    To: to,
    Body: body,
    NumMedia: '0',
  };
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (twilio)
    headers['x-twilio-signature'] = twilioSignature(
      twilio.authToken,
      `${system.publicUrl}/twilio/sms`,
      params,
    );
  return system.app.inject({
    method: 'POST',
    url: '/twilio/sms',
    headers,
    payload: new URLSearchParams(params).toString(),
  });
}
