import { accountEvents, eventually, logSize, twilioSignature } from '@leadline/test-kit';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  system,
  twilio,
  acme,
  other,
  clock,
  useMessagingSystem,
  nextSid,
  postTwilio,
  inboundSms,
  newAccount,
  settledByGateway,
  messagesOf,
  conversationOf,
} from './messaging-system';

useMessagingSystem();

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
