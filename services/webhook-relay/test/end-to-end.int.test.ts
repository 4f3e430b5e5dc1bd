import { eventually } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness, type RelayInstance } from '../../../system-test/relay';
import { opensslHmacHex } from '@leadline/test-kit';
import { postInboundSms } from '../../../system-test/inbound-sms';

let harness: Harness;
let relay: RelayInstance;

beforeAll(async () => {
  harness = await startHarness();
  relay = await harness.startRelayInstance();
});
afterAll(() => harness?.close());

const SECRET = 'whsec_end_to_end_0123456789';

describe('from a text message to a partner webhook', () => {
  it('turns an inbound SMS from an unknown sender into signed lead.created, conversation.started and reply_received deliveries', async () => {
    const partner = await harness.createPartner('End to End CRM');
    const { body: account } = await partner.api.get(`/accounts/${partner.accountId}`);
    const { body: webhook } = await partner.api.post('/webhooks', {
      url: harness.receiver.url('/e2e'),
      events: ['lead.created', 'conversation.started', 'conversation.reply_received'],
      secret: SECRET,
    });

    // Twilio posts the inbound message (no TWILIO_AUTH_TOKEN in this system, so it is not signed).
    const inbound = await postInboundSms(harness.system, {
      sid: 'SM0000000000000000000000000000e2e1',
      from: '+15125550777',
      to: account.phone_number,
      body: 'Is the rate still 6.1%?',
    });
    expect(inbound.statusCode).toBe(200);

    await eventually(async () => {
      const rows = await harness.system.services.db
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('webhook_id', '=', webhook.id)
        .execute();
      return rows.length === 3 ? rows : undefined;
    });
    await relay.dispatcher.drain();

    const requests = harness.receiver.requests('/e2e');
    for (const { headers, body } of requests) {
      expect(String(headers['x-service-signature'])).toBe(opensslHmacHex(SECRET, body));
    }
    const payloads = requests.map(({ body }) => JSON.parse(body.toString('utf8')));
    expect(payloads.map((payload) => payload.type).sort()).toEqual([
      'conversation.reply_received',
      'conversation.started',
      'lead.created',
    ]);
    const byType = Object.fromEntries(payloads.map((payload) => [payload.type, payload]));
    expect(byType['conversation.reply_received']).toMatchObject({
      account_id: partner.accountId,
      data: {
        phone: '+15125550777',
        lead_name: null,
        message_body: 'Is the rate still 6.1%?',
        message_direction: 'inbound',
      },
    });
    expect(byType['conversation.started'].data).toEqual({
      phone: '+15125550777',
      lead_name: null,
      message_body: 'Is the rate still 6.1%?',
      message_direction: 'inbound',
      message_source: null,
    });
    expect(byType['lead.created'].data).toMatchObject({ phone: '+15125550777', origin: 'inbound_message' });
  });

  it('tells the partner when a lead replies during a sequence and when a lead finishes one', async () => {
    const partner = await harness.createPartner('Sequence CRM');
    const { body: account } = await partner.api.get(`/accounts/${partner.accountId}`);
    const { body: webhook } = await partner.api.post('/webhooks', {
      url: harness.receiver.url('/sequences'),
      events: ['sequence.completed', 'sequence.reply_received'],
      secret: SECRET,
    });
    // Quiet hours would hold step 0 at night; this test is about the webhooks.
    await partner.api.patch(`/accounts/${partner.accountId}`, { sending_window: { enabled: false } });
    const { body: drip } = await partner.api.post(`/accounts/${partner.accountId}/sequences`, {
      name: 'Drip',
      steps: [
        { type: 'fixed', message: 'Hi {{first_name}}' },
        { type: 'fixed', message: 'Later', delay_hours: 24 },
      ],
    });
    const { body: once } = await partner.api.post(`/accounts/${partner.accountId}/sequences`, {
      name: 'Once',
      steps: [{ type: 'fixed', message: 'Welcome aboard' }],
    });
    await partner.api.post(`/accounts/${partner.accountId}/leads`, {
      phone: '+15125550888',
      name: 'Ana Silva',
    });
    await partner.api.post(`/accounts/${partner.accountId}/sequences/${drip.id}/enroll`, {
      phone: '+15125550888',
    });
    await partner.api.post(`/accounts/${partner.accountId}/sequences/${once.id}/enroll`, {
      phone: '+15125550888',
    });
    const inbound = await postInboundSms(harness.system, {
      sid: 'SM0000000000000000000000000000e2e2',
      from: '+15125550888',
      to: account.phone_number,
      body: 'Yes, interested',
    });
    expect(inbound.statusCode).toBe(200);

    await eventually(async () => {
      const rows = await harness.system.services.db
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('webhook_id', '=', webhook.id)
        .execute();
      return rows.length === 2 ? rows : undefined;
    });
    await relay.dispatcher.drain();
    const payloads = harness.receiver
      .requests('/sequences')
      .map(({ body }) => JSON.parse(body.toString('utf8')));
    const byType = Object.fromEntries(payloads.map((payload) => [payload.type, payload]));
    expect(byType['sequence.completed'].data).toEqual({
      phone: '+15125550888',
      lead_name: 'Ana Silva',
      sequence_id: once.id,
      sequence_name: 'Once',
      total_steps: 1,
    });
    // Only the drip is still active when the lead replies.
    expect(byType['sequence.reply_received'].data).toEqual({
      phone: '+15125550888',
      lead_name: 'Ana Silva',
      sequence_id: drip.id,
      sequence_name: 'Drip',
      current_step: 1,
      message_body: 'Yes, interested',
    });
  });
});
