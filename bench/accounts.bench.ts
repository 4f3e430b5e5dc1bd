import { createEventProducer, newUuid, READ_MODEL_SCHEMA } from '@leadline/runtime';
import Fastify from 'fastify';
import pg from 'pg';
import { comparisonTable, measure, measureInTurns, type Measurement } from './stats';
import { accountCreatedEvent, expectStatus, startBenchSystem } from './system';

const CONCURRENCY = 16;
const CREATES = 2000;
const GETS = 10_000;

/**
 * Create-account and get-account through the whole path (HTTP, lock, watermark wait, decide,
 * idempotent acks=all append, projection, read-your-writes), each beside its raw floor measured in
 * the same run: a bare kafkajs send of the same events, and a bare fastify route doing one insert
 * (one select for the get). `accounts:get` runs the get rows only (over 200 accounts created unmeasured),
 * `accounts:create` the create rows only. The get has a second floor: the bare route's select finds no
 * row (its table holds none of the accounts' ids) and answers `{}`, so a bare route doing the GET's own
 * select of the account, answering its row as JSON read by the client, is measured beside it. The get
 * and its two floors are measured in turns (ten rounds of 1,000 calls each), not one after another.
 */
export async function benchAccounts(rows: string[] = []): Promise<string> {
  const creating = rows.length === 0 || rows.includes('create');
  const getting = rows.length === 0 || rows.includes('get');
  const system = await startBenchSystem();
  const { services, env, headers } = system;
  const base = system.baseUrl;

  const ids: string[] = [];
  const createAccount = async (i: number) => {
    const response = await fetch(`${base}/v1/accounts`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: `Bench account ${i}`, metadata: { i } }),
    });
    ids.push(((await expectStatus(response, 201)) as { id: string }).id);
  };
  const create = creating
    ? await measure('create account (POST, read-your-writes)', CREATES, CONCURRENCY, createAccount)
    : undefined;
  if (!creating) for (let i = 0; i < 200; i++) await createAccount(i);

  // Floor 1: the same account.created events, sent raw with an idempotent acks=all producer.
  const producer = createEventProducer(services.kafka);
  await producer.connect();
  const events = await services.db.selectFrom('accounts').select('id').limit(CREATES).execute();
  const template = await services.codec.encode(accountCreatedEvent(events[0]!.id));
  const rawTopic = `${env.config.TOPIC_PREFIX}bench-raw`;
  await services.admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic: rawTopic, numPartitions: 8 }],
  });
  const rawSend = create
    ? await measure('kafkajs send, idempotent acks=all', CREATES, CONCURRENCY, async (i) => {
        await producer.send({ topic: rawTopic, acks: -1, messages: [{ key: `k${i}`, value: template }] });
      })
    : undefined;

  // Floor 2: a bare fastify route doing one Postgres insert, over the same HTTP client.
  const pool = new pg.Pool({ connectionString: env.config.DATABASE_URL, max: 20 });
  await pool.query('create table bench_raw (id text primary key, body jsonb not null)');
  const bare = Fastify();
  bare.post('/raw', async (request) => {
    await pool.query('insert into bench_raw (id, body) values ($1, $2)', [newUuid(), request.body]);
    return { ok: true };
  });
  // The GET's own statement (as kysely compiles it), on the read model, answering the whole row.
  const partnerId = getting
    ? (
        await services.db
          .selectFrom('accounts')
          .select('partner_id')
          .where('id', '=', ids[0]!)
          .executeTakeFirstOrThrow()
      ).partner_id
    : undefined;
  bare.get('/account/:id', async (request) => {
    const { rows } = await pool.query(
      `select * from ${READ_MODEL_SCHEMA}.accounts where "partner_id" = $1 and "id" = $2`,
      [partnerId, (request.params as { id: string }).id],
    );
    return rows[0] ?? {};
  });
  // The plain select finds a row, as the GET does: one per account the GET reads, a small body each.
  if (getting)
    await pool.query(
      `insert into bench_raw (id, body) select id, jsonb_build_object('name', 'Bench account') from unnest($1::text[]) as id`,
      [ids],
    );
  bare.get('/raw/:id', async (request) => {
    const { rows } = await pool.query('select * from bench_raw where id = $1', [
      (request.params as { id: string }).id,
    ]);
    return rows[0] ?? {};
  });
  const bareBase = await bare.listen({ port: 0, host: '127.0.0.1' });
  const rawInsert = create
    ? await measure('bare fastify + one insert', CREATES, CONCURRENCY, async (i) => {
        const response = await fetch(`${bareBase}/raw`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name: `Bench account ${i}` }),
        });
        await response.arrayBuffer();
      })
    : undefined;
  // The GET and its floors in turns, so that all three see the same load (see measureInTurns).
  const [get, rawSelect, accountSelect] = getting
    ? await measureInTurns(
        [
          {
            name: 'get account (GET)',
            task: async (i) => {
              const response = await fetch(`${base}/v1/accounts/${ids[i % ids.length]}`, { headers });
              await expectStatus(response, 200);
            },
          },
          {
            name: 'bare fastify + one select',
            task: async (i) => {
              const response = await fetch(`${bareBase}/raw/${ids[i % ids.length]}`);
              await response.arrayBuffer();
            },
          },
          {
            name: 'bare fastify + the account select',
            task: async (i) => {
              const response = await fetch(`${bareBase}/account/${ids[i % ids.length]}`);
              await expectStatus(response, 200);
            },
          },
        ],
        GETS,
        CONCURRENCY,
      )
    : [];

  await bare.close();
  await pool.end();
  await producer.disconnect();
  await system.close();

  return [
    `Accounts (${CONCURRENCY} concurrent clients, ${CREATES} creates, ${GETS} gets)`,
    '',
    comparisonTable([
      ...(create && rawSend && rawInsert
        ? [
            { subject: create, baseline: rawSend },
            { subject: create, baseline: rawInsert },
          ]
        : []),
      ...(get && rawSelect ? [{ subject: get, baseline: rawSelect }] : []),
      ...(get && accountSelect ? [{ subject: get, baseline: accountSelect }] : []),
    ] satisfies { subject: Measurement; baseline: Measurement }[]),
  ].join('\n');
}
