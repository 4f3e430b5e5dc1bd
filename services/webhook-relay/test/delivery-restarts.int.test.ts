import { eventually } from '@leadline/test-kit';
import { describe, expect, it } from 'vitest';
import { leadCreated, TEST_LEASE_MS } from '../../../system-test/relay';
import {
  harness,
  relay,
  restartRelay,
  useDeliveryHarness,
  createWebhook,
  queued,
  deliveriesLog,
} from './delivery-system';

useDeliveryHarness();

describe('relays that stop, restart and run side by side', () => {
  it('resumes the schedule on time after the relay is stopped and a new one starts', async () => {
    const partner = await harness.createPartner('Restart CRM');
    harness.receiver.answer('/restart', { status: 500 });
    const webhook = await createWebhook(partner, '/restart', ['lead.created']);
    await harness.append(partner, [leadCreated('+15125550112')]);
    await queued(webhook.id);
    await relay.dispatcher.drain();
    const firstAttempt = harness.clock.now().getTime();
    await relay.stop();

    await restartRelay();
    harness.clock.advance(29_999);
    await relay.dispatcher.drain();
    expect(harness.receiver.requests('/restart')).toHaveLength(1);
    harness.clock.advance(1);
    harness.receiver.answer('/restart', { status: 200 });
    await relay.dispatcher.drain();
    expect(harness.receiver.requests('/restart')).toHaveLength(2);
    const [logged] = (await deliveriesLog(partner, webhook.id)).deliveries;
    expect(logged.status).toBe('succeeded');
    expect(Date.parse(logged.attempts[1].attempted_at) - firstAttempt).toBe(30_000);

    // The new relay's consumer resumed from the checkpoint: new events still arrive, old ones not again.
    await harness.append(partner, [leadCreated('+15125550113')]);
    await queued(webhook.id, 2);
    await relay.dispatcher.drain();
    expect(harness.receiver.requests('/restart')).toHaveLength(3);
    expect((await deliveriesLog(partner, webhook.id)).total).toBe(2);
  });

  it('resends an attempt whose relay was killed mid-send, with the same delivery id, and records it once', async () => {
    const doomed = await harness.startRelayInstance({ consume: false });
    const partner = await harness.createPartner('Killed CRM');
    harness.receiver.answer('/killed', { status: 200, hang: true });
    const webhook = await createWebhook(partner, '/killed', ['lead.created']);
    await harness.append(partner, [leadCreated('+15125550114')]);
    const [delivery] = await queued(webhook.id);

    const interrupted = doomed.dispatcher.drain().catch((error: unknown) => error);
    await eventually(async () => (harness.receiver.requests('/killed').length === 1 ? true : undefined));
    // The process dies: its leases stay, nothing it learns is recorded, its sockets close.
    await doomed.db.destroy();
    doomed.client.close();
    expect(await interrupted).toBeInstanceOf(Error);
    await doomed.stop().catch(() => undefined);

    harness.receiver.answer('/killed', { status: 200 });
    // Its lease holds the delivery until it runs out; then any relay sends it again.
    expect(await relay.dispatcher.drain()).toBe(0);
    harness.clock.advance(TEST_LEASE_MS);
    await eventually(async () => ((await relay.dispatcher.drain()) > 0 ? true : undefined));
    const sent = harness.receiver.requests('/killed');
    expect(sent).toHaveLength(2);
    expect(sent.map((request) => request.headers['x-service-delivery-id'])).toEqual([
      delivery!.id,
      delivery!.id,
    ]);
    const [logged] = (await deliveriesLog(partner, webhook.id)).deliveries;
    expect(logged).toMatchObject({ status: 'succeeded', attempt_count: 1 });
  });

  it('stops without waiting for an endpoint that never answers, handing its delivery back for another relay at once', async () => {
    // An attempt that may wait ten minutes for its answer: stopping must not wait for it.
    const stopping = await harness.startRelayInstance({ consume: false, timeoutMs: 600_000 });
    const partner = await harness.createPartner('Silent CRM');
    harness.receiver.answer('/silent', { status: 200, hang: true });
    const webhook = await createWebhook(partner, '/silent', ['lead.created']);
    await harness.append(partner, [leadCreated('+15125550115')]);
    const [delivery] = await queued(webhook.id);
    stopping.dispatcher.start();
    await eventually(async () => (harness.receiver.requests('/silent').length === 1 ? true : undefined));

    await stopping.stop();
    // Handed back, unanswered and unrecorded: due again now, not when the lease would have run out.
    const row = await harness.system.services.db
      .selectFrom('webhook_deliveries')
      .select(['status', 'attempts', 'leased_until', 'claim_token'])
      .where('id', '=', delivery!.id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ status: 'pending', attempts: 0, leased_until: null, claim_token: null });
    harness.receiver.answer('/silent', { status: 200 });
    expect(await relay.dispatcher.drain()).toBe(1);
    expect(harness.receiver.requests('/silent').map((r) => r.headers['x-service-delivery-id'])).toEqual([
      delivery!.id,
      delivery!.id,
    ]);
    await partner.api.delete(`/webhooks/${webhook.id}`);
  });

  it('never sends the same attempt from two relays draining together', async () => {
    const second = await harness.startRelayInstance({ consume: false });
    try {
      const partner = await harness.createPartner('Contended CRM');
      const webhook = await createWebhook(partner, '/contended', ['lead.created']);
      await harness.append(
        partner,
        Array.from({ length: 200 }, (_, i) => leadCreated(`+1512556${String(1000 + i)}`)),
      );
      await queued(webhook.id, 200);
      const [a, b] = await Promise.all([relay.dispatcher.drain(), second.dispatcher.drain()]);
      const ids = harness.receiver
        .requests('/contended')
        .map((request) => request.headers['x-service-delivery-id']);
      expect(ids).toHaveLength(200);
      expect(new Set(ids).size).toBe(200);
      expect(a + b).toBeGreaterThanOrEqual(200);
    } finally {
      await second.stop();
    }
  });
});
