import {
  accountEvents,
  eventually,
  fakeClock,
  logSize,
  startFakeTwilio,
  twilioSignature,
  type FakeTwilio,
} from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

let system: TestSystem;
let twilio: FakeTwilio;
let acme: PartnerClient;
let acmeKey: string;
let other: PartnerClient;
const clock = fakeClock();

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

let sids = 0;
const nextSid = () => `SM${String(++sids).padStart(32, '0')}`;

/** Posts a Twilio webhook form, signed as Twilio signs it (or with the given signature). */
async function postTwilio(path: string, params: Record<string, string>, signature?: string) {
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

function inboundSms(to: string, from: string, body: string, extra: Record<string, string> = {}) {
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

async function newAccount(fields: Record<string, unknown> = {}) {
  const { body } = await acme.post('/accounts', { name: 'Sunrise Mortgage', ...fields });
  return { id: body.id as string, number: body.phone_number as string };
}

/** Waits until the SMS gateway has sent (or refused) the message and recorded it. */
const settledByGateway = (messageId: string) =>
  eventually(async () => {
    const row = await system.services.db
      .selectFrom('sms_outbox')
      .select('state')
      .where('message_id', '=', messageId)
      .executeTakeFirst();
    return row?.state === 'sent' || row?.state === 'failed' ? row.state : undefined;
  });

const messagesOf = async (accountId: string, phone: string) =>
  (await acme.get(`/accounts/${accountId}/conversations/${encodeURIComponent(phone)}/messages`)).body;
const conversationOf = async (accountId: string, phone: string) =>
  (await acme.get(`/accounts/${accountId}/conversations`)).body.conversations.find(
    (conversation: { phone: string }) => conversation.phone === phone,
  );

describe('numbers through Twilio', () => {
  it('buys an account its number with the SMS webhook pointed at /twilio/sms', async () => {
    const { number } = await newAccount();
    expect(twilio.numbers).toContainEqual(
      expect.objectContaining({
        phoneNumber: number,
        // Twilio retries a 5xx, a failed connection or a timeout (connection overrides in the
        // fragment, never sent back), then tries the fallback URL: the same route.
        smsUrl: `${system.publicUrl}/twilio/sms#ct=3000&rt=5000&tt=15000&rc=3&rp=ct,rt,5xx`,
        smsMethod: 'POST',
        smsFallbackUrl: `${system.publicUrl}/twilio/sms#ct=3000&rt=5000&tt=15000&rc=3&rp=ct,rt,5xx`,
        smsFallbackMethod: 'POST',
      }),
    );
  });
});

describe('inbound SMS', () => {
  it('stores a message signed exactly as Twilio signs, answers empty TwiML, and makes an unknown sender a lead', async () => {
    const account = await newAccount();
    const response = await inboundSms(account.number, '+15125550201', 'Hi, is this about my loan?', {
      NumMedia: '1',
      MediaUrl0: 'https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/MM1/Media/ME1',
      MediaContentType0: 'image/jpeg',
    });
    expect(response.status).toBe(200);
    expect(response.type).toMatch(/text\/xml/);
    expect(response.body).toBe('<?xml version="1.0" encoding="UTF-8"?><Response></Response>');

    const { messages, total } = await messagesOf(account.id, '+15125550201');
    expect(total).toBe(1);
    expect(messages[0]).toEqual({
      id: expect.any(String),
      direction: 'inbound',
      body: 'Hi, is this about my loan?',
      content_expired: false,
      sent_at: clock.now().toISOString(),
      status: 'received',
      held: null,
      // The provider's URL names our provider account: never shown; the file has not been fetched yet.
      media: [{ url: null, content_type: 'image/jpeg' }],
    });
    const lead = await acme.get(`/accounts/${account.id}/leads/+15125550201`);
    expect(lead.status).toBe(200);
    expect(lead.body).toMatchObject({
      status: 'new',
      opted_out: false,
      last_message_at: clock.now().toISOString(),
      conversation: { message_count: 1, needs_handoff: false },
    });
    const events = (await accountEvents(system.services)).filter((event) => event.account_id === account.id);
    expect(events.map((event) => event.type)).toEqual(
      expect.arrayContaining([
        'lead.created',
        'conversation.started',
        'message.received',
        'conversation.reply_received',
      ]),
    );
    expect(events.find((event) => event.type === 'lead.created')?.data).toMatchObject({
      origin: 'inbound_message',
    });
    expect(events.find((event) => event.type === 'conversation.reply_received')?.data).toEqual({
      phone: '+15125550201',
      lead_id: expect.any(String),
      lead_name: null,
      message_id: messages[0].id,
      message_body: 'Hi, is this about my loan?',
      message_direction: 'inbound',
    });
    const { body: usage } = await acme.get(
      `/usage?account_id=${account.id}&period=${clock.now().toISOString().slice(0, 7)}`,
    );
    expect(usage.totals).toMatchObject({ messages_received: 1, conversations: 1, leads_imported: 0 });
    expect((await acme.get(`/accounts/${account.id}`)).body.stats.total_conversations).toBe(1);
  });

  it('refuses a forged signature with a 403 and stores nothing', async () => {
    const account = await newAccount();
    const before = await logSize(system.services);
    const params = {
      MessageSid: nextSid(),
      From: '+15125550202',
      To: account.number,
      Body: 'hello',
      NumMedia: '0',
    };
    const forged = twilioSignature('not-the-auth-token', `${system.publicUrl}/twilio/sms`, params);
    const response = await postTwilio('/twilio/sms', params, forged);
    expect(response.status).toBe(403);
    expect(JSON.parse(response.body)).toMatchObject({ code: 'invalid_signature' });
    // Signed for another URL, or with a field changed after signing: refused too.
    const otherUrl = twilioSignature(twilio.authToken, 'https://evil.example/twilio/sms', params);
    expect((await postTwilio('/twilio/sms', params, otherUrl)).status).toBe(403);
    const tampered = twilioSignature(twilio.authToken, `${system.publicUrl}/twilio/sms`, params);
    expect((await postTwilio('/twilio/sms', { ...params, Body: 'changed' }, tampered)).status).toBe(403);
    expect(await logSize(system.services)).toBe(before);
    expect((await acme.get(`/accounts/${account.id}/leads/+15125550202`)).status).toBe(404);
  });

  it('stores a redelivered MessageSid once', async () => {
    const account = await newAccount();
    const sid = nextSid();
    const first = await inboundSms(account.number, '+15125550203', 'Once', { MessageSid: sid });
    const again = await Promise.all(
      [1, 2, 3].map(() => inboundSms(account.number, '+15125550203', 'Once', { MessageSid: sid })),
    );
    expect([first, ...again].every((response) => response.status === 200)).toBe(true);
    expect((await messagesOf(account.id, '+15125550203')).total).toBe(1);
    const received = (await accountEvents(system.services)).filter(
      (event) => event.type === 'message.received' && event.account_id === account.id,
    );
    expect(received).toHaveLength(1);
  });

  it('keeps an existing lead and its name, and answers 404 for a number no account has', async () => {
    const account = await newAccount();
    await acme.post(`/accounts/${account.id}/leads`, { phone: '+15125550204', name: 'Ana Diaz' });
    await inboundSms(account.number, '+15125550204', 'Hello');
    expect((await acme.get(`/accounts/${account.id}/leads`)).body.total).toBe(1);
    expect(await conversationOf(account.id, '+15125550204')).toMatchObject({
      name: 'Ana Diaz',
      lead_status: 'new',
    });
    expect((await inboundSms('+15125559999', '+15125550204', 'Hello')).status).toBe(404);
  });
});

describe('manual messages', () => {
  it('sends through Twilio with a status callback, pauses the AI, clears the handoff flag and moves the lead to contacted', async () => {
    const account = await newAccount();
    await acme.post(`/accounts/${account.id}/leads`, { phone: '+15125550301', name: 'Ben Ortiz' });
    // The AI agent's flag, as it will append it.
    await system.services.commands.append({
      stream: { topic: 'account', accountId: account.id },
      context: { partnerId: 'p', actor: { kind: 'system', service: 'ai-agent' }, correlationId: 'c' },
      events: [
        {
          type: 'conversation.handoff_requested',
          data: { phone: '+15125550301', lead_id: null, lead_name: 'Ben Ortiz', reason: 'asks for a human' },
        },
      ],
    });
    await inboundSms(account.number, '+15125550301', 'Can a person call me?');
    const flagged = await acme.get(`/accounts/${account.id}/conversations?needs_handoff=true`);
    expect(flagged.body.conversations.map((c: { phone: string }) => c.phone)).toEqual(['+15125550301']);

    const sent = await acme.post(`/accounts/${account.id}/conversations/5125550301/messages`, {
      body: 'Hi Ben, calling you in 5 minutes.',
      sender_name: 'Maria (loan officer)',
    });
    expect(sent.status).toBe(200);
    expect(sent.body).toEqual({
      success: true,
      message_id: expect.any(String),
      direction: 'outbound',
      source: 'manual',
    });

    await settledByGateway(sent.body.message_id);
    const { messages: delivered } = await messagesOf(account.id, '+15125550301');
    expect(delivered[0]).toEqual({
      id: sent.body.message_id,
      direction: 'outbound',
      body: 'Hi Ben, calling you in 5 minutes.',
      content_expired: false,
      sent_at: clock.now().toISOString(),
      source: 'manual',
      sender_name: 'Maria (loan officer)',
      status: 'queued',
      held: null,
    });
    expect(delivered[1]).toMatchObject({ direction: 'inbound', body: 'Can a person call me?' });
    expect(delivered[1].source).toBeUndefined();
    const atTwilio = twilio.messages.filter((message) => message.to === '+15125550301');
    expect(atTwilio).toEqual([
      {
        sid: expect.stringMatching(/^SM/),
        to: '+15125550301',
        from: account.number,
        body: 'Hi Ben, calling you in 5 minutes.',
        statusCallback: `${system.publicUrl}/twilio/status?message_id=${sent.body.message_id}&account_id=${account.id}#ct=3000&rt=5000&tt=15000&rc=3&rp=ct,rt,5xx`,
      },
    ]);

    const conversation = await conversationOf(account.id, '+15125550301');
    expect(conversation).toMatchObject({
      needs_handoff: false,
      ai_paused: true,
      message_count: 2,
      preview: 'Hi Ben, calling you in 5 minutes.',
    });
    expect((await acme.get(`/accounts/${account.id}/conversations?needs_handoff=true`)).body.total).toBe(0);
    expect((await acme.get(`/accounts/${account.id}/leads/+15125550301`)).body.status).toBe('contacted');

    // Delivery reports, signed, out of order and repeated: the status only moves forward.
    // Twilio requests the URL it was given, without the fragment.
    const callback = atTwilio[0]!.statusCallback!.slice(system.publicUrl.length).split('#')[0]!;
    const report = (status: string) => ({
      MessageSid: atTwilio[0]!.sid,
      MessageStatus: status,
      AccountSid: twilio.accountSid,
      To: '+15125550301',
    });
    expect((await postTwilio(callback, report('delivered'))).status).toBe(200);
    expect((await postTwilio(callback, report('sent'))).status).toBe(200);
    expect((await postTwilio(callback, report('delivered'), 'forged')).status).toBe(403);
    // Reports are appended without waiting for the read models.
    await eventually(async () => {
      const { messages } = await messagesOf(account.id, '+15125550301');
      return messages[0].status === 'delivered' ? true : undefined;
    });
    const { body: usage } = await acme.get(
      `/usage?account_id=${account.id}&period=${clock.now().toISOString().slice(0, 7)}`,
    );
    expect(usage.totals).toMatchObject({ messages_sent: 1, messages_received: 1, conversations: 1 });
  });

  it('ends the AI pause on resume-ai, or after the account\u2019s ai_pause_minutes', async () => {
    const account = await newAccount({ ai_pause_minutes: 30 });
    expect((await acme.get(`/accounts/${account.id}`)).body.ai_pause_minutes).toBe(30);
    await acme.post(`/accounts/${account.id}/leads`, { phone: '+15125550302' });
    await acme.post(`/accounts/${account.id}/conversations/+15125550302/messages`, { body: 'One' });
    expect(await conversationOf(account.id, '+15125550302')).toMatchObject({
      ai_paused: true,
      ai_paused_until: new Date(clock.now().getTime() + 30 * 60_000).toISOString(),
    });
    // It takes no fields: a body with one is refused, as the document's EmptyBody says, and runs nothing.
    const url = `/v1/accounts/${account.id}/conversations/+15125550302/resume-ai`;
    const withField = await system.app.inject({
      method: 'POST',
      url,
      headers: { 'x-partner-key': acmeKey },
      payload: { ai_enabled: true },
    });
    expect(withField.statusCode).toBe(400);
    expect(withField.json().errors).toEqual([
      { field: 'body.ai_enabled', message: 'Unknown field "ai_enabled".' },
    ]);
    expect((await conversationOf(account.id, '+15125550302')).ai_paused).toBe(true);
    // No body at all, as generated clients send it.
    const resumed = await system.app.inject({ method: 'POST', url, headers: { 'x-partner-key': acmeKey } });
    expect(resumed.json()).toEqual({ success: true, ai_enabled: true });
    expect(await conversationOf(account.id, '+15125550302')).toMatchObject({
      ai_paused: false,
      ai_paused_until: null,
    });

    const two = await acme.post(`/accounts/${account.id}/conversations/+15125550302/messages`, {
      body: 'Two',
    });
    await settledByGateway(two.body.message_id);
    clock.advance(29 * 60_000);
    expect((await conversationOf(account.id, '+15125550302')).ai_paused).toBe(true);
    clock.advance(60_000);
    expect((await conversationOf(account.id, '+15125550302')).ai_paused).toBe(false);
    // Resuming an AI that is not paused changes nothing and answers the same.
    const before = await logSize(system.services);
    expect(
      (await acme.post(`/accounts/${account.id}/conversations/+15125550302/resume-ai`)).body.ai_enabled,
    ).toBe(true);
    expect(await logSize(system.services)).toBe(before);
  });

  it('keeps the conversation when the lead is deleted, and 404s a phone with neither lead nor messages', async () => {
    const account = await newAccount();
    await acme.post(`/accounts/${account.id}/leads`, { phone: '+15125550303', name: 'Cleo' });
    await acme.post(`/accounts/${account.id}/conversations/+15125550303/messages`, { body: 'Hello Cleo' });
    await acme.delete(`/accounts/${account.id}/leads/+15125550303`);
    expect(await conversationOf(account.id, '+15125550303')).toMatchObject({
      name: null,
      lead_status: null,
      message_count: 1,
    });
    expect((await messagesOf(account.id, '+15125550303')).total).toBe(1);
    const missing = await acme.get(`/accounts/${account.id}/conversations/+15125550399/messages`);
    expect(missing.status).toBe(404);
    const send = await acme.post(`/accounts/${account.id}/conversations/+15125550399/messages`, {
      body: 'x',
    });
    expect(send.status).toBe(404);
    expect(
      (await acme.post(`/accounts/${account.id}/conversations/+15125550303/messages`, { body: '' })).status,
    ).toBe(400);
  });

  it('paginates messages newest first', async () => {
    const account = await newAccount();
    await acme.post(`/accounts/${account.id}/leads`, { phone: '+15125550304' });
    for (const body of ['m1', 'm2', 'm3']) {
      await acme.post(`/accounts/${account.id}/conversations/+15125550304/messages`, { body });
      clock.advance(1000);
    }
    const page = await acme.get(
      `/accounts/${account.id}/conversations/+15125550304/messages?limit=2&offset=1`,
    );
    expect(page.body).toMatchObject({ total: 3, limit: 2, offset: 1 });
    expect(page.body.messages.map((m: { body: string }) => m.body)).toEqual(['m2', 'm1']);
  });
});

describe('opt-out, opt-in and HELP', () => {
  const optOutWords = ['STOP', 'stopall', '  Unsubscribe ', 'CANCEL', 'end', 'Quit', 'REVOKE', 'optout'];
  let account: { id: string; number: string };
  beforeAll(async () => {
    account = await newAccount({ company_name: 'Sunrise Home Loans' });
  });

  /** The outbound messages to a phone, once the gateway has settled every one of them. */
  async function outboundTo(phone: string, expected: number) {
    return eventually(async () => {
      const { messages } = await messagesOf(account.id, phone);
      const outbound = messages.filter((message: { direction: string }) => message.direction === 'outbound');
      if (outbound.length < expected) return undefined;
      for (const message of outbound) await settledByGateway(message.id);
      return outbound;
    });
  }

  it.each(optOutWords.map((word, index) => [word, `+1512555041${index}`]))(
    '%j opts the number out, with one confirmation naming the company',
    async (word, phone) => {
      await inboundSms(account.number, phone, word);
      await inboundSms(account.number, phone, word.toLowerCase());
      const outbound = await outboundTo(phone, 1);
      expect(outbound).toHaveLength(1);
      expect(outbound[0]).toMatchObject({ source: 'system', sender_name: null });
      expect(outbound[0].body).toContain('Sunrise Home Loans');
      expect(outbound[0].body).toMatch(/START/);
      // The confirmation itself reaches the opted-out number, once.
      expect(twilio.messages.filter((message) => message.to === phone)).toHaveLength(1);

      expect((await acme.get(`/accounts/${account.id}/leads/${phone}`)).body.opted_out).toBe(true);
      expect((await conversationOf(account.id, phone)).opted_out).toBe(true);
      const manual = await acme.post(`/accounts/${account.id}/conversations/${phone}/messages`, {
        body: 'Hi?',
      });
      expect(manual.status).toBe(409);
      expect(manual.body).toMatchObject({ code: 'lead_opted_out' });
    },
  );

  it('refuses a manual message to a number whose STOP was answered but is not decided yet (409), writing nothing', async () => {
    const phone = '+15125550419';
    await acme.post(`/accounts/${account.id}/leads`, { phone });
    // The STOP was answered to Twilio (the guard is written then); its decision is still queued.
    await system.services.db
      .insertInto('opt_out_guards')
      .values({ account_id: account.id, phone, message_sid: nextSid(), created_at: clock.now() })
      .execute();
    try {
      const before = await logSize(system.services);
      const manual = await acme.post(`/accounts/${account.id}/conversations/${phone}/messages`, {
        body: 'Hi?',
      });
      expect(manual).toMatchObject({ status: 409, body: { code: 'lead_opted_out' } });
      expect(await logSize(system.services)).toBe(before);
    } finally {
      await system.services.db.deleteFrom('opt_out_guards').where('phone', '=', phone).execute();
    }
  });

  it('treats a sentence containing STOP as an ordinary reply', async () => {
    await inboundSms(account.number, '+15125550420', 'Can I stop by the office at 3?');
    expect((await acme.get(`/accounts/${account.id}/leads/+15125550420`)).body.opted_out).toBe(false);
    expect((await messagesOf(account.id, '+15125550420')).total).toBe(1);
  });

  it.each([
    ['START', '+15125550431'],
    [' unstop', '+15125550432'],
    ['Yes', '+15125550433'],
  ])('%j opts a number back in, with a confirmation', async (word, phone) => {
    await inboundSms(account.number, phone, 'STOP');
    await inboundSms(account.number, phone, word);
    const outbound = await outboundTo(phone, 2);
    expect(outbound.map((message: { body: string }) => message.body)).toEqual([
      expect.stringContaining('resubscribed'),
      expect.stringContaining('unsubscribed'),
    ]);
    expect((await acme.get(`/accounts/${account.id}/leads/${phone}`)).body.opted_out).toBe(false);
    const manual = await acme.post(`/accounts/${account.id}/conversations/${phone}/messages`, {
      body: 'Welcome back',
    });
    expect(manual.status).toBe(200);
  });

  it('answers YES from a number that never opted out like any reply', async () => {
    await inboundSms(account.number, '+15125550434', 'yes');
    expect((await messagesOf(account.id, '+15125550434')).total).toBe(1);
  });

  it('answers HELP with the company name and how to opt out', async () => {
    await inboundSms(account.number, '+15125550440', 'help');
    const [reply] = await outboundTo('+15125550440', 1);
    expect(reply.source).toBe('system');
    expect(reply.body).toContain('Sunrise Home Loans');
    expect(reply.body).toContain('Reply STOP to unsubscribe');
  });
});

describe('another partner', () => {
  it('gets a 404 on every conversations route of an account that is not its own', async () => {
    const account = await newAccount();
    await acme.post(`/accounts/${account.id}/leads`, { phone: '+15125550501' });
    const mine = await acme.post(`/accounts/${account.id}/conversations/+15125550501/messages`, {
      body: 'Mine',
    });
    await settledByGateway(mine.body.message_id);
    const before = await logSize(system.services);
    const responses = [
      await other.get(`/accounts/${account.id}/conversations`),
      await other.get(`/accounts/${account.id}/conversations?needs_handoff=true`),
      await other.get(`/accounts/${account.id}/conversations/+15125550501/messages`),
      await other.post(`/accounts/${account.id}/conversations/+15125550501/messages`, { body: 'Not mine' }),
      await other.post(`/accounts/${account.id}/conversations/+15125550501/resume-ai`),
      await other.get(`/accounts/${account.id}/leads/+15125550501`),
    ];
    for (const response of responses) {
      expect(response.status).toBe(404);
      expect(response.body.code).toBe('account_not_found');
    }
    expect(await logSize(system.services)).toBe(before);
  });
});
