import { randomBytes } from 'node:crypto';
import { createPool, listenToChannel } from '@leadline/runtime';
import { eventually } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DELIVERIES_CHANNEL } from '../src/dispatcher';
import { leadCreated, startHarness, type Harness, type Partner } from '../../../system-test/relay';

let harness: Harness;

beforeAll(async () => {
  harness = await startHarness();
});
afterAll(() => harness?.close());

const SECRET = 'whsec_fairness_0123456789';
const HANG_MS = 30_000;

async function createWebhook(partner: Partner, path: string) {
  const response = await partner.api.post('/webhooks', {
    url: harness.receiver.url(path),
    events: ['lead.created'],
    secret: SECRET,
  });
  expect(response.status).toBe(201);
  return response.body as { id: string };
}

const eventIdOf = (body: Buffer) => (JSON.parse(body.toString('utf8')) as { id: string }).id;

function percentile(values: number[], p: number) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

describe('one partner cannot hold up another', () => {
  it('delivers every event to a healthy receiver while another partner hangs for 30 s, and records a NUL or garbage answer once', async () => {
    // The relay as it runs: its loop, woken by the deliveries' NOTIFY; attempts may take the full hang.
    const relay = await harness.startRelayInstance({
      timeoutMs: HANG_MS + 10_000,
      concurrency: 8,
      endpointConcurrency: 2,
    });
    const listenerPool = createPool(harness.system.env.config.DATABASE_URL, { maxConnections: 1 });
    const deliveries = await listenToChannel(listenerPool, DELIVERIES_CHANNEL, {
      onNotification: () => relay.dispatcher.wake(),
      onReconnect: () => relay.dispatcher.wake(),
    });
    relay.dispatcher.start();
    try {
      const slow = await harness.createPartner('Slow CRM');
      const healthy = await harness.createPartner('Healthy CRM');
      harness.receiver.answer('/hang', { status: 200, delayMs: HANG_MS });
      // A NUL, a lone surrogate's bytes and a byte that is no UTF-8 at all, in a 200.
      harness.receiver.answer('/nul', {
        status: 200,
        body: Buffer.concat([Buffer.from('{"ok":true}\u0000'), Buffer.from([0xed, 0xa0, 0x80, 0xff])]),
      });
      const garbage = randomBytes(3 * 1024 * 1024);
      harness.receiver.answer('/garbage', { status: 200, body: garbage });
      const hang = await createWebhook(slow, '/hang');
      const nul = await createWebhook(slow, '/nul');
      const junk = await createWebhook(slow, '/garbage');
      await createWebhook(healthy, '/healthy');

      const slowEvents = 6;
      await harness.append(
        slow,
        Array.from({ length: slowEvents }, (_, i) => leadCreated(`+1512557${String(1000 + i)}`)),
      );
      // The slow partner's endpoint now holds every slot it may have.
      await eventually(async () => (harness.receiver.requests('/hang').length >= 2 ? true : undefined), {
        message: 'the hanging endpoint never got its first deliveries',
      });

      const appendedAt = new Map<string, number>();
      for (let batch = 0; batch < 10; batch++) {
        const before = Date.now();
        const events = await harness.append(
          healthy,
          Array.from({ length: 5 }, (_, i) => leadCreated(`+1512558${String(1000 + batch * 5 + i)}`)),
        );
        for (const event of events) appendedAt.set(event.id, before);
      }
      const arrived = await eventually(
        async () => {
          const requests = harness.receiver.requests('/healthy');
          const ids = new Set(requests.map((request) => eventIdOf(request.body)));
          return [...appendedAt.keys()].every((id) => ids.has(id)) ? requests : undefined;
        },
        { timeoutMs: HANG_MS - 5000, message: 'the healthy partner did not get every event during the hang' },
      );
      // Every healthy delivery arrived while the slow partner's attempts were still hanging: none of
      // them has an answer recorded yet.
      const hangingRows = await harness.system.services.db
        .selectFrom('webhook_deliveries')
        .select(['status', 'attempts'])
        .where('webhook_id', '=', hang.id)
        .execute();
      expect(hangingRows).toHaveLength(slowEvents);
      expect(hangingRows.every((row) => row.status === 'pending' && row.attempts === 0)).toBe(true);

      const lateness = arrived.map(
        (request) => request.receivedAt - appendedAt.get(eventIdOf(request.body))!,
      );
      console.warn(
        `healthy partner beside a 30 s hang: ${lateness.length} deliveries, lateness p50 ${percentile(lateness, 50)} ms, ` +
          `p99 ${percentile(lateness, 99)} ms, max ${Math.max(...lateness)} ms (from before the append to arrival)`,
      );
      expect(new Set(arrived.map((request) => eventIdOf(request.body))).size).toBe(appendedAt.size);

      // The NUL and the garbage receivers: each event once, its answer recorded, storable and short.
      for (const webhook of [nul, junk]) {
        const { body } = await eventually(
          async () => {
            const response = await slow.api.get(`/webhooks/${webhook.id}/deliveries`);
            const done = response.body.deliveries.filter(
              (delivery: { status: string }) => delivery.status === 'succeeded',
            );
            return done.length === slowEvents ? response : undefined;
          },
          { message: `the deliveries to ${webhook.id} were not recorded` },
        );
        for (const delivery of body.deliveries) {
          expect(delivery.attempt_count).toBe(1);
          expect(delivery.attempts).toHaveLength(1);
          const excerpt: string = delivery.attempts[0].response_excerpt;
          expect(excerpt.includes('\u0000')).toBe(false);
          expect(excerpt.length).toBeLessThanOrEqual(1024);
        }
      }
      const nulIds = harness.receiver.requests('/nul').map((request) => eventIdOf(request.body));
      expect(nulIds).toHaveLength(slowEvents);
      expect(new Set(nulIds).size).toBe(slowEvents);
      expect(harness.receiver.requests('/garbage')).toHaveLength(slowEvents);
    } finally {
      deliveries.close();
      await listenerPool.end();
      // The hanging attempts end with the relay's connections.
      relay.client.close();
      await relay.stop();
    }
  });
});
