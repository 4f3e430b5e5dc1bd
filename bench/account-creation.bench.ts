import { createEventProducer, newUuid } from '@leadline/runtime';
import Fastify from 'fastify';
import type { Producer } from 'kafkajs';
import pg from 'pg';
import { cpuTable, measure, measureInTurns, percentile, throughput, type Measurement } from './stats';
import { stageBreakdown } from './stages';
import { accountCreatedEvent, expectStatus, partnerHeaders, startBenchSystem } from './system';

const CLIENTS = 16;
const CREATES = 1000;
const WARM_UP = 2 * CLIENTS;
/** Creations one at a time: latency without queueing, the one-client goal. */
const ONE_CLIENT_CREATES = 300;

/**
 * Account creation from 16 partner backends at once (one key each), through the whole path, beside
 * its floor in the same run: the same 16 clients sending account.created records raw with an
 * idempotent acks=all kafkajs producer. Creation used to be serialized platform-wide (one lock and a
 * wait for the whole topic); this is the row that shows whether creations still queue behind one
 * another. Goal: p50 and p99 each within 3x of the raw send's.
 *
 * Then one client: creations one at a time in turns with single raw sends (no queueing, so the ratio is
 * the path's own latency, not the machine's CPU). Goal: p50 within 3x of the raw send's.
 *
 * Both beside a second floor, the same I/O as a creation done bare (`sameIoFloor`): against it the CPU
 * per creation is what compares (goal: at most 2x).
 */
export async function benchAccountCreation(): Promise<string> {
  const system = await startBenchSystem();
  const { services, env } = system;
  const clients = await partnerHeaders(system, CLIENTS);
  const createAccount = async (i: number) => {
    const response = await fetch(`${system.baseUrl}/v1/accounts`, {
      method: 'POST',
      headers: clients[i % CLIENTS]!,
      body: JSON.stringify({ name: `Bench account ${i}`, metadata: { i } }),
    });
    await expectStatus(response, 201);
  };
  await measure('warm-up', WARM_UP, CLIENTS, (i) => createAccount(CREATES + i));
  let create!: Measurement;
  const stages = await stageBreakdown('a create account, 16 clients', async () => {
    create = await measure(
      `create account, ${CLIENTS} clients (one partner each)`,
      CREATES,
      CLIENTS,
      createAccount,
    );
  });

  const producer = createEventProducer(services.kafka);
  await producer.connect();
  const record = await services.codec.encode(accountCreatedEvent(newUuid()));
  const rawTopic = `${env.config.TOPIC_PREFIX}bench-raw-creation`;
  await services.admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic: rawTopic, numPartitions: 8 }],
  });
  const send = (i: number) =>
    producer
      .send({ topic: rawTopic, acks: -1, messages: [{ key: `k${i}`, value: record }] })
      .then(() => undefined);
  await measure('warm-up', WARM_UP, CLIENTS, (i) => send(CREATES + i));
  const rawSend = await measure(
    `kafkajs send, idempotent acks=all, ${CLIENTS} clients`,
    CREATES,
    CLIENTS,
    send,
  );
  const floor = await sameIoFloor(env.config.DATABASE_URL, producer, rawTopic, record);
  await measure('warm-up', WARM_UP, CLIENTS, (i) => floor.create(CREATES + i));
  const sameIo = await measure(`same I/O bare, ${CLIENTS} clients`, CREATES, CLIENTS, floor.create);

  let oneClient!: Measurement[];
  const oneClientStages = await stageBreakdown('a create account, one client', async () => {
    oneClient = await measureInTurns(
      [
        { name: 'create account, one client', task: (i) => createAccount(CREATES + WARM_UP + i) },
        { name: 'kafkajs send, idempotent acks=all, one client', task: send },
        {
          name: 'same I/O bare, one client',
          task: (i) => floor.create(CREATES + WARM_UP + i),
        },
      ],
      ONE_CLIENT_CREATES,
      1,
    );
  });
  const [createOne, rawSendOne, sameIoOne] = oneClient;

  await floor.close();
  await producer.disconnect();
  await system.close();
  return [
    `Account creation (${CLIENTS} clients, ${CREATES} creates, after ${WARM_UP} to warm up)`,
    '',
    ratioTable(create, rawSend),
    '',
    ratioTable(create, sameIo, 'none for latency; CPU per creation at most 2x, below'),
    '',
    SAME_IO,
    '',
    cpuTable([
      { subject: create, baseline: rawSend },
      { subject: create, baseline: sameIo },
    ]),
    '',
    stages,
    '',
    `Account creation, one client (${ONE_CLIENT_CREATES} creates in turns with as many raw sends)`,
    '',
    ratioTable(createOne!, rawSendOne!, 'p50 ≤ 3x'),
    '',
    ratioTable(createOne!, sameIoOne!, 'none for latency; CPU per creation at most 2x, below'),
    '',
    SAME_IO,
    '',
    cpuTable([
      { subject: createOne!, baseline: rawSendOne! },
      { subject: createOne!, baseline: sameIoOne! },
    ]),
    '',
    oneClientStages,
  ].join('\n');
}

function ratioTable(subject: Measurement, baseline: Measurement, goal = 'p50 and p99 each ≤ 3x'): string {
  const row = (m: Measurement) =>
    `| ${m.name} | ${throughput(m).toFixed(0)} | ${percentile(m.samples, 50).toFixed(2)} | ${percentile(m.samples, 99).toFixed(2)} |`;
  const ratio = (p: number) => (percentile(subject.samples, p) / percentile(baseline.samples, p)).toFixed(1);
  return [
    '| scenario | ops/s | p50 ms | p99 ms |',
    '|---|---:|---:|---:|',
    row(subject),
    row(baseline),
    '',
    `throughput ${(throughput(baseline) / throughput(subject)).toFixed(1)}x slower, p50 ${ratio(50)}x, ` +
      `p99 ${ratio(99)}x the second row's (goal: ${goal})`,
  ].join('\n');
}

const SAME_IO =
  'Same I/O bare: a bare fastify route reserving a slug, appending one record (acks=all) and inserting one row (see sameIoFloor).';

/**
 * A creation's same-I/O floor: the I/O it cannot do without, done bare. A bare fastify route, in one
 * transaction, inserts the account's unique reservation (its slug; the number's would be a second
 * row), appends the encoded account.created record with one idempotent acks=all send and commits; then
 * inserts the account's row (the projector's insert) and answers. No locks, no number provisioning, no
 * waiting for a consumer.
 */
async function sameIoFloor(databaseUrl: string, producer: Producer, rawTopic: string, record: Buffer) {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: CLIENTS + 4 });
  await pool.query(`create table bench_slug_reservations (slug text primary key);
    create table bench_accounts (id text primary key, name text, slug text, created_at timestamptz)`);
  const bare = Fastify();
  bare.post('/accounts', async (request, reply) => {
    const { name } = request.body as { name: string };
    const account = { id: newUuid(), name, slug: `bench-${newUuid()}`, created_at: new Date().toISOString() };
    const client = await pool.connect();
    try {
      await client.query('begin');
      await client.query('insert into bench_slug_reservations (slug) values ($1)', [account.slug]);
      await producer.send({ topic: rawTopic, acks: -1, messages: [{ key: account.id, value: record }] });
      await client.query('commit');
    } catch (error) {
      await client.query('rollback');
      throw error;
    } finally {
      client.release();
    }
    await pool.query('insert into bench_accounts (id, name, slug, created_at) values ($1, $2, $3, $4)', [
      account.id,
      account.name,
      account.slug,
      account.created_at,
    ]);
    return reply.status(201).send(account);
  });
  const url = await bare.listen({ port: 0, host: '127.0.0.1' });
  return {
    async create(i: number) {
      const response = await fetch(`${url}/accounts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: `Bench account ${i}` }),
      });
      await expectStatus(response, 201);
    },
    async close() {
      await bare.close();
      await pool.end();
    },
  };
}
