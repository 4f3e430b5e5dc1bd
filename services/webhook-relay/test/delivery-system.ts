import { timingSafeEqual } from 'node:crypto';
import type { DomainEvent } from '@leadline/events';
import { eventually } from '@leadline/test-kit';
import { afterAll, beforeAll, expect } from 'vitest';
import { startHarness, type Harness, type Partner, type RelayInstance } from '../../../system-test/relay';

/** What the delivery tests share: the relay harness, webhooks created through the API, and reads of their deliveries and of the partner log. */
export let harness: Harness;
export let relay: RelayInstance;

/** The relay harness (the system, a receiver, partners) and one relay instance, for this file. */
export function useDeliveryHarness() {
  beforeAll(async () => {
    harness = await startHarness();
    relay = await harness.startRelayInstance();
  });
  afterAll(() => harness?.close());
}

/** A new relay instance in place of the stopped one, as a restarted process; tests after it use it. */
export async function restartRelay() {
  relay = await harness.startRelayInstance();
}

export const SECRET = 'whsec_test_0123456789abcdef';

export async function createWebhook(partner: Partner, path: string, events: string[], secret = SECRET) {
  const response = await partner.api.post('/webhooks', { url: harness.receiver.url(path), events, secret });
  expect(response.status).toBe(201);
  return response.body as { id: string; url: string; active: boolean };
}

/** Waits until the relay has queued `count` deliveries for the webhook. */
export async function queued(webhookId: string, count = 1) {
  return eventually(
    async () => {
      const rows = await harness.system.services.db
        .selectFrom('webhook_deliveries')
        .selectAll()
        .where('webhook_id', '=', webhookId)
        .orderBy('created_at')
        .execute();
      return rows.length >= count ? rows : undefined;
    },
    { message: `${count} deliveries queued for ${webhookId}` },
  );
}

export async function deliveriesLog(partner: Partner, webhookId: string, query = '') {
  const response = await partner.api.get(`/webhooks/${webhookId}/deliveries${query}`);
  expect(response.status).toBe(200);
  return response.body;
}

/** The partner topic as any consumer reads it, for the events the relay appends. */
export async function partnerLog(): Promise<DomainEvent[]> {
  const { kafka, topics, codec } = harness.system.services;
  const consumer = kafka.consumer({
    groupId: `${harness.system.env.config.TOPIC_PREFIX}reader-${Date.now()}`,
  });
  const events: DomainEvent[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic: topics.partner, fromBeginning: true });
  const offsets = await harness.system.services.admin.fetchTopicOffsets(topics.partner);
  const total = offsets.reduce((sum, entry) => sum + Number(entry.high), 0);
  await consumer.run({
    eachMessage: async ({ message }) => void events.push(await codec.decode(message.value!)),
  });
  try {
    return await eventually(async () => (events.length >= total ? events : undefined));
  } finally {
    await consumer.disconnect();
  }
}

export const constantTimeEqual = (a: string, b: string) =>
  a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
