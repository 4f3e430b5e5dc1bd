import https from 'node:https';
import type { AddressInfo } from 'node:net';
import {
  connectInfrastructure,
  createPool,
  createSecretBox,
  DEVELOPMENT_WEBHOOK_KEY,
  listenToChannel,
  newUuid,
  systemClock,
  type Database,
} from '@leadline/runtime';
import type { Insertable, Kysely } from 'kysely';
import { createDispatcher, DELIVERIES_CHANNEL } from '../services/webhook-relay/src/dispatcher';
import { createWebhookClient } from '../services/webhook-relay/src/http-client';
import { selfSignedCertificate } from '@leadline/test-kit';
import { benchEnvironment } from './environment';
import { measure, percentile, throughput } from './stats';

const CONCURRENCY = 16;
const DELIVERIES = 5000;
const DUE_TOGETHER = 5000;

const body = JSON.stringify({
  id: newUuid(),
  type: 'lead.created',
  account_id: 'bench-account',
  created_at: new Date().toISOString(),
  data: { phone: '+15125550123', lead_name: 'Bench Lead', status: 'new' },
});

function deliveries(webhookId: string, count: number, dueAt: Date, retriesDone: number) {
  return Array.from({ length: count }, (): Insertable<Database['webhook_deliveries']> => ({
    id: newUuid(),
    webhook_id: webhookId,
    partner_id: 'bench-partner',
    account_id: 'bench-account',
    event_id: newUuid(),
    event_type: 'lead.created',
    body,
    status: 'pending',
    retries_done: retriesDone,
    next_attempt_at: dueAt,
    last_status_code: null,
    last_error: null,
    created_at: dueAt,
    completed_at: null,
  }));
}

async function insertAll(db: Kysely<Database>, rows: Insertable<Database['webhook_deliveries']>[]) {
  for (let start = 0; start < rows.length; start += 1000) {
    await db
      .insertInto('webhook_deliveries')
      .values(rows.slice(start, start + 1000))
      .execute();
  }
}

/**
 * Signed deliveries per second through the relay's dispatcher (lease due deliveries, sign, send over
 * the SSRF-pinned keep-alive HTTPS client, record each outcome) beside a bare node:https loop posting the
 * same body to the same local no-op receiver in the same run; then the lateness of 5,000 retries
 * falling due at one instant, measured by the running dispatcher loop on the real clock, beside the
 * floor the bare loop's rate sets (5,000 attempts at 16 at once take that long, however early they start).
 */
export async function benchWebhooks(): Promise<string> {
  const env = await benchEnvironment();
  const infrastructure = await connectInfrastructure(env.config, 'leadline-bench-webhooks', {
    maxConnections: CONCURRENCY + 4,
  });
  const { db } = infrastructure;
  const certificate = selfSignedCertificate();
  const receiver = https.createServer(certificate, (request, response) => {
    request.resume();
    request.on('end', () => response.end('{}'));
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const url = `https://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  // Setup only: the webhook's read-model row, as the projector would write it.
  const secrets = createSecretBox(DEVELOPMENT_WEBHOOK_KEY);
  const webhookId = newUuid();
  await db
    .insertInto('webhooks')
    .values({
      id: webhookId,
      partner_id: 'bench-partner',
      url,
      events: ['lead.created'],
      active: true,
      secret_ciphertext: secrets.seal('whsec_bench_0123456789', {
        partnerId: 'bench-partner',
        webhookId,
      }),
      disabled_reason: null,
      created_at: new Date(0),
      updated_at: new Date(0),
    })
    .execute();

  // Baseline: the same body, POSTed by a bare keep-alive node:https loop with the same concurrency.
  const agent = new https.Agent({ keepAlive: true, maxSockets: CONCURRENCY, ca: certificate.cert });
  const bare = await measure('bare node:https POST loop', DELIVERIES, CONCURRENCY, async () => {
    await new Promise<void>((resolve, reject) => {
      const request = https.request(url, {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json' },
      });
      request.on('error', reject);
      request.on('response', (response) => {
        response.resume();
        response.on('end', resolve);
      });
      request.end(body);
    });
  });

  const client = createWebhookClient({
    timeoutMs: 10_000,
    allowPrivateTargets: true,
    ca: certificate.cert,
    maxSockets: CONCURRENCY,
  });
  const dispatcher = createDispatcher({
    db,
    clock: systemClock,
    client,
    secrets,
    retryDelaysSeconds: [30, 120, 600, 3600, 14_400],
    concurrency: CONCURRENCY,
    // One receiver stands for every partner here: the per-webhook cap must not be what is measured.
    endpointConcurrency: CONCURRENCY,
    attemptTimeoutMs: 10_000,
    commands: { append: async () => [] },
  });
  await insertAll(db, deliveries(webhookId, DELIVERIES, new Date(), 0));
  const started = performance.now();
  const sent = await dispatcher.drain();
  const seconds = (performance.now() - started) / 1000;
  if (sent !== DELIVERIES) throw new Error(`sent ${sent} of ${DELIVERIES}`);
  const relayRate = DELIVERIES / seconds;

  // 5,000 first retries due at the same instant, picked up by the running loop (real clock), woken by
  // the deliveries' NOTIFY as in the relay's main.
  const listenerPool = createPool(env.config.DATABASE_URL, { maxConnections: 1 });
  const queued = await listenToChannel(listenerPool, DELIVERIES_CHANNEL, {
    onNotification: () => dispatcher.wake(),
    onReconnect: () => dispatcher.wake(),
  });
  dispatcher.start();
  const dueAt = new Date(Date.now() + 3000);
  const retries = deliveries(webhookId, DUE_TOGETHER, dueAt, 1);
  await insertAll(db, retries);
  const ids = retries.map((row) => row.id!);
  for (;;) {
    const { count } = await db
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.countAll<string>().as('count'))
      .where('status', '=', 'succeeded')
      .where('retries_done', '=', 1)
      .executeTakeFirstOrThrow();
    if (Number(count) >= DUE_TOGETHER) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  await dispatcher.stop();
  queued.close();
  await listenerPool.end();
  const attempts = await db
    .selectFrom('webhook_delivery_attempts')
    .select('attempted_at')
    .where('delivery_id', 'in', ids)
    .execute();
  const lateness = attempts.map((attempt) => attempt.attempted_at.getTime() - dueAt.getTime());

  client.close();
  agent.destroy();
  receiver.closeAllConnections();
  await new Promise((resolve) => receiver.close(resolve));
  await infrastructure.close();
  await env.dispose();

  const fmt = (value: number, digits = 0) => value.toFixed(digits);
  // The floor of the lateness: the time the bare loop, at the same concurrency and this run's rate,
  // takes to start the last of the first 50% and 99% of the retries (nothing can start them sooner).
  const floor = (share: number) => ((DUE_TOGETHER * share) / throughput(bare)) * 1000;
  return [
    `Webhooks (local no-op HTTPS receiver on loopback, ${CONCURRENCY} concurrent, ${DELIVERIES} deliveries)`,
    '',
    '| scenario | deliveries/s | p50 ms | p99 ms | vs bare client |',
    '|---|---:|---:|---:|---:|',
    `| ${bare.name} | ${fmt(throughput(bare))} | ${fmt(percentile(bare.samples, 50), 2)} | ${fmt(percentile(bare.samples, 99), 2)} | 1.0x |`,
    `| relay dispatcher: lease, sign, SSRF-pinned send, record | ${fmt(relayRate)} | | | ${fmt(throughput(bare) / relayRate, 1)}x slower |`,
    '',
    `| ${DUE_TOGETHER} retries due at one instant | lateness p50 ms | p99 ms | max ms |`,
    '|---|---:|---:|---:|',
    `| dispatcher loop, ${CONCURRENCY} concurrent | ${fmt(percentile(lateness, 50))} | ${fmt(percentile(lateness, 99))} | ${fmt(Math.max(...lateness))} |`,
    `| floor: the bare loop's time to reach them at its rate above | ${fmt(floor(0.5))} | ${fmt(floor(0.99))} | ${fmt(floor(1))} |`,
  ].join('\n');
}
