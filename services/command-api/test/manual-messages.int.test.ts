import { eventually, logSize } from '@leadline/test-kit';
import { describe, expect, it } from 'vitest';
import {
  system,
  twilio,
  acme,
  acmeKey,
  clock,
  useMessagingSystem,
  postTwilio,
  inboundSms,
  newAccount,
  settledByGateway,
  messagesOf,
  conversationOf,
} from './messaging-system';

useMessagingSystem();

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
