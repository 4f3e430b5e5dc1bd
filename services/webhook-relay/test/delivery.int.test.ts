import { eventually } from '@leadline/test-kit';
import { describe, expect, it } from 'vitest';
import { leadCreated, statusChanged } from '../../../system-test/relay';
import { opensslHmacHex } from '@leadline/test-kit';
import {
  harness,
  relay,
  useDeliveryHarness,
  SECRET,
  createWebhook,
  queued,
  deliveriesLog,
  partnerLog,
  constantTimeEqual,
} from './delivery-system';

useDeliveryHarness();

describe('delivering webhooks', () => {
  it('sends lead.created signed so that an independent HMAC implementation verifies it', async () => {
    const partner = await harness.createPartner('Signed CRM');
    const webhook = await createWebhook(partner, '/signed', ['lead.created']);
    const [event] = await harness.append(partner, [
      leadCreated('+15125550101', { first_name: 'Ana', last_name: 'Silva', email: 'ana@example.com' }),
    ]);
    const [delivery] = await queued(webhook.id);
    await relay.dispatcher.drain();

    const [request] = harness.receiver.requests('/signed');
    expect(request).toBeDefined();
    const { headers, body } = request!;
    const signature = String(headers['x-service-signature']);
    expect(constantTimeEqual(signature, opensslHmacHex(SECRET, body))).toBe(true);
    const timestamp = String(headers['x-service-timestamp']);
    expect(Number(timestamp)).toBe(Math.floor(harness.clock.now().getTime() / 1000));
    const timestamped = Buffer.concat([Buffer.from(`${timestamp}.`), body]);
    expect(String(headers['x-service-timestamped-signature'])).toBe(opensslHmacHex(SECRET, timestamped));
    expect(opensslHmacHex('another secret', body)).not.toBe(signature);

    expect(headers['x-service-delivery-id']).toBe(delivery!.id);
    expect(headers['content-type']).toBe('application/json');
    expect(JSON.parse(body.toString('utf8'))).toEqual({
      id: event!.id,
      type: 'lead.created',
      account_id: partner.accountId,
      created_at: event!.occurred_at,
      data: {
        phone: '+15125550101',
        lead_name: 'Ana Silva',
        first_name: 'Ana',
        last_name: 'Silva',
        email: 'ana@example.com',
        company: null,
        source: null,
        external_id: null,
        status: 'new',
        origin: 'api',
        metadata: {},
      },
    });

    const log = await deliveriesLog(partner, webhook.id);
    expect(log).toMatchObject({ total: 1, limit: 50, offset: 0 });
    expect(log.deliveries[0]).toMatchObject({
      id: delivery!.id,
      event_id: event!.id,
      event_type: 'lead.created',
      account_id: partner.accountId,
      status: 'succeeded',
      attempt_count: 1,
      next_attempt_at: null,
      last_status_code: 200,
      attempts: [{ attempt: 1, status_code: 200, error: null, response_excerpt: '{"received":true}' }],
    });
  });

  it('sends the checklist webhooks: item_collected with a signed file_url that serves the document, completed in the spec shape', async () => {
    const partner = await harness.createPartner('Checklist CRM');
    const webhook = await createWebhook(partner, '/checklist', [
      'checklist.item_collected',
      'checklist.completed',
    ]);
    const documentId = `doc-${Date.now()}`;
    const bytes = Buffer.from('%PDF-1.4 pay stub');
    await harness.system.services.db
      .insertInto('documents')
      .values({
        id: documentId,
        account_id: partner.accountId,
        phone: '+15125550190',
        message_id: documentId,
        media_index: 0,
        content_type: 'application/pdf',
        file_size: bytes.length,
        text_content: null,
        bytes,
        created_at: new Date(),
      })
      .execute();
    const progress = { checklist_progress: 1, completed_items: 1, total_items: 1 };
    const lead = { lead_id: 'lead-190', phone: '+15125550190', lead_name: 'Ana Silva' };
    await harness.append(partner, [
      {
        type: 'checklist.item_collected',
        data: {
          ...lead,
          requirement_id: 'req-1',
          requirement_name: 'Pay stub',
          requirement_type: 'document',
          value: null,
          document: { document_id: documentId, content_type: 'application/pdf', file_size: bytes.length },
          message_id: 'msg-1',
          ...progress,
        },
      },
      { type: 'checklist.completed', data: { ...lead, ...progress } },
    ]);
    await queued(webhook.id, 2);
    await relay.dispatcher.drain();
    const bodies = harness.receiver
      .requests('/checklist')
      .map(
        (request) =>
          JSON.parse(request.body.toString('utf8')) as { type: string; data: Record<string, unknown> },
      );
    const collected = bodies.find((body) => body.type === 'checklist.item_collected')!;
    expect(collected.data).toMatchObject({
      phone: '+15125550190',
      lead_name: 'Ana Silva',
      requirement_name: 'Pay stub',
      requirement_type: 'document',
      value: null,
      checklist_progress: 1,
    });
    const fileUrl = new URL(String(collected.data.file_url));
    const file = await harness.system.app.inject({
      method: 'GET',
      url: `${fileUrl.pathname}${fileUrl.search}`,
    });
    expect([file.statusCode, file.headers['content-type']]).toEqual([200, 'application/pdf']);
    expect(file.rawPayload.equals(bytes)).toBe(true);
    expect(bodies.find((body) => body.type === 'checklist.completed')!.data).toEqual({
      phone: '+15125550190',
      lead_name: 'Ana Silva',
      checklist_progress: 1,
      completed_items: 1,
      total_items: 1,
    });
  });

  it('retries at exactly 30 s, 2 min, 10 min, 1 h and 4 h, then drops the delivery and logs webhook.delivery_failed', async () => {
    const partner = await harness.createPartner('Failing CRM');
    harness.receiver.answer('/down', { status: 500 });
    const webhook = await createWebhook(partner, '/down', ['lead.created']);
    const [event] = await harness.append(partner, [leadCreated('+15125550102')]);
    const [delivery] = await queued(webhook.id);
    const sent = () => harness.receiver.requests('/down');

    const start = harness.clock.now().getTime();
    await relay.dispatcher.drain();
    expect(sent()).toHaveLength(1);
    const expected = [start];
    for (const delaySeconds of [30, 120, 600, 3600, 14_400]) {
      harness.clock.advance(delaySeconds * 1000 - 1);
      await relay.dispatcher.drain();
      expect(sent(), 'nothing is sent a millisecond early').toHaveLength(expected.length);
      harness.clock.advance(1);
      await relay.dispatcher.drain();
      expected.push(harness.clock.now().getTime());
      expect(sent()).toHaveLength(expected.length);
    }
    harness.clock.advance(24 * 3600 * 1000);
    await relay.dispatcher.drain();
    expect(sent()).toHaveLength(6);

    // One delivery: the same id and the same body bytes on every attempt; the timestamp moves on.
    expect(new Set(sent().map((request) => request.headers['x-service-delivery-id']))).toEqual(
      new Set([delivery!.id]),
    );
    expect(new Set(sent().map((request) => request.body.toString('base64'))).size).toBe(1);
    expect(new Set(sent().map((request) => request.headers['x-service-timestamp'])).size).toBe(6);

    const [logged] = (await deliveriesLog(partner, webhook.id)).deliveries;
    expect(logged).toMatchObject({
      status: 'failed',
      attempt_count: 6,
      last_status_code: 500,
      next_attempt_at: null,
    });
    expect(
      logged.attempts.map((attempt: { attempted_at: string }) => Date.parse(attempt.attempted_at)),
    ).toEqual(expected);
    expect(logged.attempts.map((attempt: { error: string }) => attempt.error)).toEqual(
      Array(6).fill('HTTP 500'),
    );

    const failure = (await partnerLog()).find(
      (entry) => entry.type === 'webhook.delivery_failed' && entry.data.delivery_id === delivery!.id,
    );
    expect(failure).toMatchObject({
      partner_id: partner.id,
      account_id: null,
      causation_id: event!.id,
      data: {
        webhook_id: webhook.id,
        delivery_id: delivery!.id,
        event_id: event!.id,
        event_type: 'lead.created',
        account_id: partner.accountId,
        attempts: 6,
        last_status_code: 500,
        last_error: 'HTTP 500',
      },
    });
  });

  it('waits for a Retry-After longer than the scheduled delay', async () => {
    const partner = await harness.createPartner('Busy CRM');
    let calls = 0;
    harness.receiver.answer('/busy', () =>
      ++calls === 1 ? { status: 503, headers: { 'retry-after': '300' } } : { status: 200 },
    );
    const webhook = await createWebhook(partner, '/busy', ['lead.created']);
    await harness.append(partner, [leadCreated('+15125550103')]);
    await queued(webhook.id);
    await relay.dispatcher.drain();
    const first = harness.clock.now().getTime();
    harness.clock.advance(299_999);
    await relay.dispatcher.drain();
    expect(harness.receiver.requests('/busy')).toHaveLength(1);
    harness.clock.advance(1);
    await relay.dispatcher.drain();
    expect(harness.receiver.requests('/busy')).toHaveLength(2);
    const [logged] = (await deliveriesLog(partner, webhook.id)).deliveries;
    expect(logged.status).toBe('succeeded');
    expect(Date.parse(logged.attempts[1].attempted_at) - first).toBe(300_000);
  });

  it('counts a redirect (never followed) and an answer past the timeout as failures', async () => {
    const partner = await harness.createPartner('Odd CRM');
    harness.receiver.answer('/moved', {
      status: 302,
      headers: { location: harness.receiver.url('/elsewhere') },
    });
    harness.receiver.answer('/slow', { status: 200, hang: true });
    const moved = await createWebhook(partner, '/moved', ['lead.created']);
    const slow = await createWebhook(partner, '/slow', ['lead.created']);
    await harness.append(partner, [leadCreated('+15125550104')]);
    await queued(moved.id);
    await queued(slow.id);
    await relay.dispatcher.drain();

    expect(harness.receiver.requests('/elsewhere')).toHaveLength(0);
    const [redirected] = (await deliveriesLog(partner, moved.id)).deliveries;
    expect(redirected).toMatchObject({ status: 'pending', last_status_code: 302 });
    expect(redirected.last_error).toMatch(/^Redirect to .*\/elsewhere not followed$/);
    const [timedOut] = (await deliveriesLog(partner, slow.id)).deliveries;
    expect(timedOut).toMatchObject({ status: 'pending', last_status_code: null });
    expect(timedOut.last_error).toMatch(/No answer within \d+ ms/);
    expect(Date.parse(timedOut.next_attempt_at) - harness.clock.now().getTime()).toBe(30_000);
    await partner.api.delete(`/webhooks/${moved.id}`);
    await partner.api.delete(`/webhooks/${slow.id}`);
  });

  it('disables a webhook that answers 410 and sends it nothing more', async () => {
    const partner = await harness.createPartner('Gone CRM');
    harness.receiver.answer('/gone', { status: 410 });
    const webhook = await createWebhook(partner, '/gone', ['lead.created']);
    await harness.append(partner, [leadCreated('+15125550105')]);
    await queued(webhook.id);
    await relay.dispatcher.drain();

    const [logged] = (await deliveriesLog(partner, webhook.id)).deliveries;
    expect(logged).toMatchObject({ status: 'failed', attempt_count: 1, last_status_code: 410 });
    const listed = await eventually(async () => {
      const { body } = await partner.api.get('/webhooks');
      return body.webhooks[0].active === false ? body.webhooks[0] : undefined;
    });
    expect(listed.id).toBe(webhook.id);

    await harness.append(partner, [leadCreated('+15125550106')]);
    harness.clock.advance(24 * 3600 * 1000);
    await relay.dispatcher.drain();
    expect(harness.receiver.requests('/gone')).toHaveLength(1);
    expect((await deliveriesLog(partner, webhook.id)).total).toBe(1);
  });

  it("keeps partners apart: a partner's webhooks receive only its own accounts' events", async () => {
    const north = await harness.createPartner('North CRM');
    const south = await harness.createPartner('South CRM');
    const northHook = await createWebhook(north, '/north', ['lead.created']);
    const southHook = await createWebhook(south, '/south', ['lead.created']);
    await harness.append(north, [leadCreated('+15125550107'), leadCreated('+15125550108')]);
    await harness.append(south, [leadCreated('+15125550109')]);
    await queued(northHook.id, 2);
    await queued(southHook.id, 1);
    await relay.dispatcher.drain();
    const accountsOf = (path: string) =>
      harness.receiver.requests(path).map((request) => JSON.parse(request.body.toString()).account_id);
    expect(accountsOf('/north')).toEqual([north.accountId, north.accountId]);
    expect(accountsOf('/south')).toEqual([south.accountId]);
    expect((await north.api.get(`/webhooks/${southHook.id}/deliveries`)).status).toBe(404);
  });

  it('respects event filters and inactive webhooks, and names the lead of a status change', async () => {
    const partner = await harness.createPartner('Filter CRM');
    const statuses = await createWebhook(partner, '/statuses', ['lead.status_changed']);
    const paused = await createWebhook(partner, '/paused', ['lead.created', 'lead.status_changed']);
    expect((await partner.api.patch(`/webhooks/${paused.id}`, { active: false })).body.active).toBe(false);

    const [, changed] = await harness.append(partner, [
      leadCreated('+15125550110', { name: 'Bea Moreno' }),
      statusChanged('+15125550110', 'new', 'qualified'),
    ]);
    await queued(statuses.id);
    await relay.dispatcher.drain();
    const bodies = harness.receiver
      .requests('/statuses')
      .map((request) => JSON.parse(request.body.toString()));
    expect(bodies).toEqual([
      {
        id: changed!.id,
        type: 'lead.status_changed',
        account_id: partner.accountId,
        created_at: changed!.occurred_at,
        data: {
          phone: '+15125550110',
          lead_name: 'Bea Moreno',
          previous_status: 'new',
          new_status: 'qualified',
        },
      },
    ]);
    expect(harness.receiver.requests('/paused')).toHaveLength(0);

    // Active again: it receives what happens from now on.
    await partner.api.patch(`/webhooks/${paused.id}`, { active: true });
    await harness.append(partner, [statusChanged('+15125550110', 'qualified', 'converted')]);
    await queued(paused.id);
    await relay.dispatcher.drain();
    const resumed = harness.receiver
      .requests('/paused')
      .map((request) => JSON.parse(request.body.toString()));
    expect(resumed.map((body) => [body.type, body.data.new_status])).toEqual([
      ['lead.status_changed', 'converted'],
    ]);
  });

  it('queues a bulk import of 1,000 leads as 1,000 deliveries, each once', async () => {
    const partner = await harness.createPartner('Bulk CRM');
    const webhook = await createWebhook(partner, '/bulk', ['lead.created']);
    const events = Array.from({ length: 1000 }, (_, i) => leadCreated(`+1512555${String(2000 + i)}`));
    await harness.append(partner, events);
    await queued(webhook.id, 1000);
    await relay.dispatcher.drain();
    const received = harness.receiver.requests('/bulk');
    expect(received).toHaveLength(1000);
    expect(new Set(received.map((request) => request.headers['x-service-delivery-id'])).size).toBe(1000);
  });

  it('refuses a loopback target unless private targets are allowed', async () => {
    const strict = await harness.startRelayInstance({ allowPrivateTargets: false, consume: false });
    try {
      const partner = await harness.createPartner('Loopback CRM');
      const webhook = await createWebhook(partner, '/loopback', ['lead.created']);
      await harness.append(partner, [leadCreated('+15125550111')]);
      await queued(webhook.id);
      // Only the strict relay looks; the permissive one stays idle.
      await strict.dispatcher.drain();
      expect(harness.receiver.requests('/loopback')).toHaveLength(0);
      const [logged] = (await deliveriesLog(partner, webhook.id)).deliveries;
      expect(logged).toMatchObject({ status: 'pending', last_status_code: null });
      expect(logged.last_error).toBe('blocked: private address');
      await partner.api.delete(`/webhooks/${webhook.id}`);
    } finally {
      await strict.stop();
    }
  });

  it('sends a signed test event and retries a finished delivery on request, with the same delivery id', async () => {
    const partner = await harness.createPartner('Tester CRM');
    const webhook = await createWebhook(partner, '/test', ['lead.created']);
    const queuedTest = await partner.api.post(`/webhooks/${webhook.id}/test`);
    expect(queuedTest.status).toBe(202);
    await relay.dispatcher.drain();
    const [request] = harness.receiver.requests('/test');
    expect(JSON.parse(request!.body.toString())).toMatchObject({
      type: 'webhook.test',
      account_id: null,
      data: { webhook_id: webhook.id },
    });
    expect(String(request!.headers['x-service-signature'])).toBe(opensslHmacHex(SECRET, request!.body));

    const deliveryId = queuedTest.body.delivery_id;
    expect(request!.headers['x-service-delivery-id']).toBe(deliveryId);
    const retried = await partner.api.post(`/webhooks/${webhook.id}/deliveries/${deliveryId}/retry`);
    expect(retried.status).toBe(202);
    await relay.dispatcher.drain();
    const again = harness.receiver.requests('/test');
    expect(again).toHaveLength(2);
    expect(again[1]!.headers['x-service-delivery-id']).toBe(deliveryId);
    expect(again[1]!.body.equals(again[0]!.body)).toBe(true);
    const [logged] = (await deliveriesLog(partner, webhook.id)).deliveries;
    expect(logged).toMatchObject({ status: 'succeeded', attempt_count: 2 });

    expect((await partner.api.post(`/webhooks/${webhook.id}/deliveries/unknown/retry`)).status).toBe(400);
    await partner.api.post(`/webhooks/${webhook.id}/deliveries/${deliveryId}/retry`);
    const pending = await partner.api.post(`/webhooks/${webhook.id}/deliveries/${deliveryId}/retry`);
    expect(pending.status).toBe(409);
    expect(pending.body.code).toBe('delivery_pending');
    await partner.api.delete(`/webhooks/${webhook.id}`);
    await relay.dispatcher.drain();
    expect((await partner.api.get(`/webhooks/${webhook.id}/deliveries`)).status).toBe(404);
    const row = await harness.system.services.db
      .selectFrom('webhook_deliveries')
      .select('status')
      .where('id', '=', deliveryId)
      .executeTakeFirstOrThrow();
    expect(row.status).toBe('cancelled');
  });
});
