import { eventually, registrationProfile } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness, type RelayInstance } from '../../../system-test/relay';

let harness: Harness;
let relay: RelayInstance;

// The SMS gateway runs in the system and enforces the carriers' sending rule: an account whose campaign
// is not approved (here: never submitted) has its US long code's messages held.
beforeAll(async () => {
  harness = await startHarness({ gateway: true, registrationEnforced: true });
  relay = await harness.startRelayInstance();
});
afterAll(() => harness?.close());

const SECRET = 'whsec_message_held_0123456789';
const PHONE = '+15125550881';

describe('a message the gateway holds', () => {
  it('shows why it waits on the messages list, is told by a message.held webhook, and loses its hold once sent', async () => {
    const partner = await harness.createPartner('Held CRM');
    const { body: webhook } = await partner.api.post('/webhooks', {
      url: harness.receiver.url('/held'),
      events: ['message.held'],
      secret: SECRET,
    });
    expect(
      (await partner.api.post(`/accounts/${partner.accountId}/leads`, { phone: PHONE, name: 'Ana Diaz' }))
        .status,
    ).toBe(201);
    const sent = await partner.api.post(`/accounts/${partner.accountId}/conversations/${PHONE}/messages`, {
      body: 'Your rate lock expires Friday',
    });
    expect(sent.status).toBe(200);
    const messageId: string = sent.body.message_id;
    const messageOf = async () => {
      const list = await partner.api.get(
        `/accounts/${partner.accountId}/conversations/${encodeURIComponent(PHONE)}/messages`,
      );
      expect(list.status).toBe(200);
      return list.body.messages.find((message: { id: string }) => message.id === messageId);
    };

    const held = await eventually(async () => {
      const message = await messageOf();
      return message?.held ? message : undefined;
    });
    expect(held).toMatchObject({
      status: 'queued',
      held: { reason: 'registration_pending', until: null },
    });

    await eventually(async () => {
      const rows = await harness.system.services.db
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('webhook_id', '=', webhook.id)
        .execute();
      return rows.length === 1 ? rows : undefined;
    });
    await relay.dispatcher.drain();
    const payloads = harness.receiver.requests('/held').map(({ body }) => JSON.parse(body.toString('utf8')));
    expect(payloads).toEqual([
      {
        id: expect.any(String),
        type: 'message.held',
        account_id: partner.accountId,
        created_at: expect.any(String),
        data: {
          phone: PHONE,
          lead_name: 'Ana Diaz',
          message_id: messageId,
          reason: 'registration_pending',
          next_attempt_at: null,
        },
      },
    ]);

    // The campaign's approval releases the message: it is sent, and no longer says it waits.
    await harness.append(partner, [
      {
        type: 'compliance.registration_submitted',
        data: {
          submission_id: 'sub-1',
          profile: registrationProfile,
          tax_id: { last4: '6789', ciphertext: 'v2.sealed' },
        },
      },
      {
        type: 'compliance.registration_step_changed',
        data: {
          submission_id: 'sub-1',
          step: 'campaign',
          previous_status: 'pending',
          status: 'approved',
          reason: null,
        },
      },
    ]);
    const released = await eventually(async () => {
      const message = await messageOf();
      return message?.status !== 'queued' ? message : undefined;
    });
    // The local provider reports delivery at once: sent or delivered, either way it left.
    expect(['sent', 'delivered']).toContain(released.status);
    expect(released.held).toBeNull();
  });
});
