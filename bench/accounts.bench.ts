import { projections, startProjector } from '@leadline/projector';
import {
  createDb,
  createEventProducer,
  createSecretBox,
  DEVELOPMENT_WEBHOOK_KEY,
  newUuid,
  systemClock,
} from '@leadline/runtime';
import Fastify from 'fastify';
import pg from 'pg';
import { buildApp } from '../services/command-api/src/app';
import { generateApiKey } from '../services/command-api/src/partners/api-keys';
import { createPartner } from '../services/command-api/src/partners/partners';
import { connectCommandServices } from '../services/command-api/src/services';
import { createLocalNumberPool } from '../services/command-api/src/telephony/local-number-pool';
import { benchEnvironment } from './environment';
import { comparisonTable, measure } from './stats';

const CONCURRENCY = 16;
const CREATES = 2000;
const GETS = 10_000;

/**
 * Create-account and get-account through the whole path (HTTP, lock, watermark wait, decide,
 * idempotent acks=all append, projection, read-your-writes), each beside its raw floor measured in
 * the same run: a bare kafkajs send of the same events, and a bare fastify route doing one insert.
 */
export async function benchAccounts(): Promise<string> {
  const env = await benchEnvironment();
  const services = await connectCommandServices(
    { ...env.config, PROJECTION_WAIT_MS: 30_000 },
    'leadline-bench',
  );
  const projectorDb = createDb(env.config.DATABASE_URL, { maxConnections: 4 });
  const numbers = createLocalNumberPool(env.config.DATABASE_URL);
  const projector = await startProjector({
    ...services,
    db: projectorDb,
    groupId: `${env.config.TOPIC_PREFIX}leadline.projector`,
    projections,
  });
  const app = await buildApp({
    db: services.db,
    commands: services.commands,
    numbers,
    clock: systemClock,
    newId: newUuid,
    publicUrl: 'http://127.0.0.1',
    rateLimitPerMinute: 10_000_000,
    webhookSecrets: createSecretBox(DEVELOPMENT_WEBHOOK_KEY),
  });
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  const key = generateApiKey();
  await createPartner({ ...services, newId: newUuid }, 'Bench partner', key);
  const headers = { 'x-partner-key': key, 'content-type': 'application/json' };

  const ids: string[] = [];
  const create = await measure('create account (POST, read-your-writes)', CREATES, CONCURRENCY, async (i) => {
    const response = await fetch(`${base}/v1/accounts`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: `Bench account ${i}`, metadata: { i } }),
    });
    if (response.status !== 201) throw new Error(`create answered ${response.status}`);
    ids.push(((await response.json()) as { id: string }).id);
  });
  const get = await measure('get account (GET)', GETS, CONCURRENCY, async (i) => {
    const response = await fetch(`${base}/v1/accounts/${ids[i % ids.length]}`, { headers });
    if (response.status !== 200) throw new Error(`get answered ${response.status}`);
    await response.arrayBuffer();
  });

  // Floor 1: the same account.created events, sent raw with an idempotent acks=all producer.
  const producer = createEventProducer(services.kafka);
  await producer.connect();
  const events = await services.db.selectFrom('accounts').select('id').limit(CREATES).execute();
  const template = await services.codec.encode({
    id: newUuid(),
    type: 'account.created',
    version: 1,
    account_id: events[0]!.id,
    partner_id: 'bench',
    occurred_at: new Date().toISOString(),
    actor: { kind: 'system', service: 'bench' },
    correlation_id: 'bench',
    causation_id: null,
    data: {
      name: 'Bench',
      company_name: 'Bench',
      slug: 'bench',
      phone_number: '+15550000000',
      phone_number_provisioned: true,
      forwarding_number: null,
      branding: { logo_url: null, accent_color: null },
      metadata: {},
    },
  });
  const rawTopic = `${env.config.TOPIC_PREFIX}bench-raw`;
  await services.admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic: rawTopic, numPartitions: 8 }],
  });
  const rawSend = await measure('kafkajs send, idempotent acks=all', CREATES, CONCURRENCY, async (i) => {
    await producer.send({ topic: rawTopic, acks: -1, messages: [{ key: `k${i}`, value: template }] });
  });

  // Floor 2: a bare fastify route doing one Postgres insert, over the same HTTP client.
  const pool = new pg.Pool({ connectionString: env.config.DATABASE_URL, max: 20 });
  await pool.query('create table bench_raw (id text primary key, body jsonb not null)');
  const bare = Fastify();
  bare.post('/raw', async (request) => {
    await pool.query('insert into bench_raw (id, body) values ($1, $2)', [newUuid(), request.body]);
    return { ok: true };
  });
  bare.get('/raw/:id', async (request) => {
    const { rows } = await pool.query('select * from bench_raw where id = $1', [
      (request.params as { id: string }).id,
    ]);
    return rows[0] ?? {};
  });
  const bareBase = await bare.listen({ port: 0, host: '127.0.0.1' });
  const rawInsert = await measure('bare fastify + one insert', CREATES, CONCURRENCY, async (i) => {
    const response = await fetch(`${bareBase}/raw`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: `Bench account ${i}` }),
    });
    await response.arrayBuffer();
  });
  const rawSelect = await measure('bare fastify + one select', GETS, CONCURRENCY, async (i) => {
    const response = await fetch(`${bareBase}/raw/${ids[i % ids.length]}`);
    await response.arrayBuffer();
  });

  await bare.close();
  await pool.end();
  await producer.disconnect();
  await app.close();
  await projector.stop();
  await projectorDb.destroy();
  await numbers.close();
  await services.close();
  await env.dispose();

  return [
    `Accounts (${CONCURRENCY} concurrent clients, ${CREATES} creates, ${GETS} gets)`,
    '',
    comparisonTable([
      { subject: create, baseline: rawSend },
      { subject: create, baseline: rawInsert },
      { subject: get, baseline: rawSelect },
    ]),
  ].join('\n');
}
