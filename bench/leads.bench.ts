import { logCompression, newUuid, READ_MODEL_SCHEMA } from '@leadline/runtime';
import Fastify from 'fastify';
import pg from 'pg';
import { stageBreakdown } from './stages';
import { cpuWindow } from './cpu';
import { comparisonTable, cpuTable, measure, percentile, type Measurement } from './stats';
import { expectStatus, startBenchSystem, type BenchSystem } from './system';

const BULK_RUNS = 20;
const BULK_SIZE = 1000;
const SINGLE_IMPORTS = 3000;
const CONCURRENCY = 16;

const phoneOf = (run: number, index: number) => `+1${String(2000000000 + run * 10_000 + index)}`;

/**
 * Bulk import of 1,000 leads until all are queryable, beside the floor of the same work done raw in
 * the same run (one sendBatch of the same 1,000 encoded events, then one multi-row insert of 1,000
 * rows); and single-lead imports (row `single`) at 16 concurrent clients beside two floors: a bare fastify
 * route doing one insert, and one doing the same I/O as an import (the decision's reads, one acks=all
 * append, the projector's insert).
 */
export async function benchLeads(rows: string[] = []): Promise<string> {
  // `leads:single` skips the bulk rows (minutes on a shared machine); `leads` runs both.
  const bulkRuns = rows.length === 0 || rows.includes('bulk') ? BULK_RUNS : 0;
  const system = await startBenchSystem();
  const bulk = await measureBulkImports(system, bulkRuns);
  const pool = new pg.Pool({ connectionString: system.env.config.DATABASE_URL, max: 20 });
  await pool.query(
    'create table bench_leads (id text primary key, phone text, name text, email text, source text)',
  );
  const rawTopic = `${system.env.config.TOPIC_PREFIX}bench-raw-leads`;
  await system.services.admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic: rawTopic, numPartitions: 8 }],
  });
  const floor = await measureBulkFloor(system, pool, rawTopic, bulkRuns);
  const single = await measureSingleImports(system);
  const rawInsert = await measureBareInsert(pool);
  const sameIo = await measureSameIoFloor(system, pool, rawTopic, single.accounts);

  await pool.end();
  await system.close();

  return leadsReport(bulkRuns, bulk, floor, { ...single, rawInsert, sameIo });
}

/** A new account of the bench's partner. */
async function newAccount({ baseUrl, headers }: BenchSystem): Promise<string> {
  return (
    (await expectStatus(
      await fetch(`${baseUrl}/v1/accounts`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ name: 'Bench' }),
      }),
      201,
    )) as { id: string }
  ).id;
}

/** Bulk: a fresh account per run, so every lead is created. */
async function measureBulkImports(system: BenchSystem, bulkRuns: number) {
  const { headers, baseUrl } = system;
  const samples: number[] = [];
  const bulkCpu = cpuWindow();
  for (let run = 0; run < bulkRuns; run++) {
    const account = await newAccount(system);
    const leads = Array.from({ length: BULK_SIZE }, (_, i) => ({
      phone: phoneOf(run, i),
      name: `Lead ${i}`,
      email: `lead${i}@example.com`,
      source: 'application',
    }));
    const started = performance.now();
    const result = (await expectStatus(
      await fetch(`${baseUrl}/v1/accounts/${account}/leads/bulk`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ leads }),
      }),
      200,
    )) as { imported: number };
    const listed = (await expectStatus(
      await fetch(`${baseUrl}/v1/accounts/${account}/leads?limit=1`, { headers }),
      200,
    )) as {
      total: number;
    };
    samples.push(performance.now() - started);
    if (result.imported !== BULK_SIZE || listed.total !== BULK_SIZE)
      throw new Error('bulk import lost leads');
  }
  return { samples, cpu: bulkCpu.stop() };
}

/** The floor: the same events, already encoded, in one sendBatch; then 1,000 rows in one insert. */
async function measureBulkFloor(
  { services }: BenchSystem,
  pool: pg.Pool,
  rawTopic: string,
  bulkRuns: number,
) {
  const producer = services.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const samples: number[] = [];
  const floorCpu = cpuWindow();
  for (let run = 0; run < bulkRuns; run++) {
    const accountId = newUuid();
    const events = await Promise.all(
      Array.from({ length: BULK_SIZE }, (_, i) =>
        services.codec.encode({
          id: newUuid(),
          type: 'lead.created',
          version: 1,
          account_id: accountId,
          partner_id: 'bench',
          occurred_at: new Date().toISOString(),
          actor: { kind: 'system', service: 'bench' },
          correlation_id: 'bench',
          causation_id: null,
          data: {
            lead_id: newUuid(),
            phone: phoneOf(run + 100, i),
            name: `Lead ${i}`,
            first_name: null,
            last_name: null,
            email: `lead${i}@example.com`,
            company: null,
            notes: null,
            source: 'application',
            external_id: null,
            property_address: null,
            metadata: {},
            status: 'new',
            auto_sequence: false,
            origin: 'bulk',
          },
        }),
      ),
    );
    const rows = Array.from({ length: BULK_SIZE }, (_, i) => [
      newUuid(),
      phoneOf(run + 100, i),
      `Lead ${i}`,
      `lead${i}@example.com`,
    ]);
    const started = performance.now();
    // Compressed as an append of this size to the log is, so the floor does the same Kafka work.
    await producer.send({
      topic: rawTopic,
      acks: -1,
      compression: logCompression(events.reduce((bytes, value) => bytes + value.length, 0)),
      messages: events.map((value) => ({ key: accountId, value })),
    });
    await pool.query(
      `insert into bench_leads (id, phone, name, email, source)
       select id, phone, name, email, 'application' from unnest($1::text[], $2::text[], $3::text[], $4::text[]) as t(id, phone, name, email)`,
      [0, 1, 2, 3].map((column) => rows.map((row) => row[column])),
    );
    samples.push(performance.now() - started);
  }
  const cpu = floorCpu.stop();
  await producer.disconnect();
  return { samples, cpu };
}

/** Single imports at 16 concurrent clients: each client its own account, then all in one account. */
async function measureSingleImports(system: BenchSystem) {
  const { headers, baseUrl } = system;
  const accounts = await Promise.all(Array.from({ length: CONCURRENCY }, () => newAccount(system)));
  const importInto = (accountFor: (i: number) => string, offset: number) => async (i: number) => {
    await expectStatus(
      await fetch(`${baseUrl}/v1/accounts/${accountFor(i)}/leads`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ phone: phoneOf(500 + offset, i), name: `Single ${i}` }),
      }),
      201,
    );
  };
  let spread!: Measurement;
  const stages = await stageBreakdown('a single lead import, 16 clients over 16 accounts', async () => {
    spread = await measure(
      'single import, 16 clients over 16 accounts',
      SINGLE_IMPORTS,
      CONCURRENCY,
      importInto((i) => accounts[i % CONCURRENCY]!, 0),
    );
  });
  const oneAccount = await measure(
    'single import, 16 clients into one account',
    SINGLE_IMPORTS,
    CONCURRENCY,
    importInto(() => accounts[0]!, 1),
  );
  return { spread, oneAccount, stages, accounts };
}

/** The single import's floor: a bare fastify route doing one insert. */
async function measureBareInsert(pool: pg.Pool): Promise<Measurement> {
  const bare = Fastify();
  bare.post('/raw', async (request) => {
    const body = request.body as { phone: string; name: string };
    await pool.query('insert into bench_leads (id, phone, name) values ($1, $2, $3)', [
      newUuid(),
      body.phone,
      body.name,
    ]);
    return { ok: true };
  });
  const bareUrl = await bare.listen({ port: 0, host: '127.0.0.1' });
  const rawInsert = await measure('bare fastify + one insert', SINGLE_IMPORTS, CONCURRENCY, async (i) => {
    const response = await fetch(`${bareUrl}/raw`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ phone: phoneOf(900, i), name: `Single ${i}` }),
    });
    await response.arrayBuffer();
  });
  await bare.close();
  return rawInsert;
}

/**
 * The single import's same-I/O floor: the I/O one import cannot do without, done bare, with the
 * accounts the imports used. A bare fastify route reads the account and the lead by phone (the reads
 * its decision needs), appends one event (the lead as JSON, about the size of the log's record) with an
 * idempotent acks=all send keyed by the account, then inserts the lead's row (the projector's insert),
 * and answers. No locks, no waiting for a consumer, no schema registry encoding or sealing.
 */
async function measureSameIoFloor(
  { services }: BenchSystem,
  pool: pg.Pool,
  rawTopic: string,
  accounts: string[],
): Promise<Measurement> {
  const producer = services.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const bare = Fastify();
  bare.post('/accounts/:id/leads', async (request, reply) => {
    const accountId = (request.params as { id: string }).id;
    const body = request.body as { phone: string; name: string };
    const [account, existing] = await Promise.all([
      pool.query(`select * from ${READ_MODEL_SCHEMA}.accounts where id = $1`, [accountId]),
      pool.query(`select * from ${READ_MODEL_SCHEMA}.leads where account_id = $1 and phone = $2`, [
        accountId,
        body.phone,
      ]),
    ]);
    if (account.rowCount !== 1 || existing.rowCount !== 0) throw new Error('the floor read the wrong rows');
    const lead = { id: newUuid(), phone: body.phone, name: body.name, created_at: new Date().toISOString() };
    await producer.send({
      topic: rawTopic,
      acks: -1,
      messages: [
        { key: accountId, value: JSON.stringify({ type: 'lead.created', account_id: accountId, lead }) },
      ],
    });
    await pool.query('insert into bench_leads (id, phone, name) values ($1, $2, $3)', [
      lead.id,
      lead.phone,
      lead.name,
    ]);
    return reply.status(201).send(lead);
  });
  const bareUrl = await bare.listen({ port: 0, host: '127.0.0.1' });
  const sameIo = await measure('same I/O bare', SINGLE_IMPORTS, CONCURRENCY, async (i) => {
    const response = await fetch(`${bareUrl}/accounts/${accounts[i % CONCURRENCY]}/leads`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ phone: phoneOf(950, i), name: `Single ${i}` }),
    });
    if (response.status !== 201) throw new Error(`the same-I/O floor answered ${response.status}`);
    await response.arrayBuffer();
  });
  await bare.close();
  await producer.disconnect();
  return sameIo;
}

type Timed = { samples: number[]; cpu: ReturnType<ReturnType<typeof cpuWindow>['stop']> };

function leadsReport(
  bulkRuns: number,
  { samples: bulk, cpu: bulkUsed }: Timed,
  { samples: floor, cpu: floorUsed }: Timed,
  single: Awaited<ReturnType<typeof measureSingleImports>> & { rawInsert: Measurement; sameIo: Measurement },
): string {
  // CPU per 1,000 bulk imports of 1,000 leads each; the floor's includes encoding its events.
  const bulkRows = {
    subject: { name: 'bulk import of 1,000', count: bulk.length, seconds: 0, samples: bulk, cpu: bulkUsed },
    baseline: {
      name: 'sendBatch + multi-row insert',
      count: floor.length,
      seconds: 0,
      samples: floor,
      cpu: floorUsed,
    },
  };
  const [b50, b99, f50, f99] = [
    percentile(bulk, 50),
    percentile(bulk, 99),
    percentile(floor, 50),
    percentile(floor, 99),
  ];
  return [
    `Leads: bulk import of ${BULK_SIZE} until queryable (${BULK_RUNS} runs)`,
    '',
    '| scenario | p50 ms | p99 ms | floor p50 ms | floor p99 ms | p50 / floor p50 (goal ≤ 3x) |',
    '|---|---:|---:|---:|---:|---:|',
    `| bulk import, POST + GET until all listed | ${b50.toFixed(1)} | ${b99.toFixed(1)} | ${f50.toFixed(1)} | ${f99.toFixed(1)} | ${(b50 / f50).toFixed(2)}x |`,
    '',
    'Floor: one idempotent acks=all sendBatch of the same 1,000 encoded events, then one multi-row insert of 1,000 rows.',
    '',
    ...(bulkRuns > 0 ? [cpuTable([bulkRows])] : []),
    '',
    `Leads: single-lead imports (${CONCURRENCY} concurrent clients, ${SINGLE_IMPORTS} imports each)`,
    '',
    comparisonTable([
      { subject: single.spread, baseline: single.rawInsert },
      { subject: single.spread, baseline: single.sameIo },
      { subject: single.oneAccount, baseline: single.rawInsert },
      { subject: single.oneAccount, baseline: single.sameIo },
    ]),
    '',
    'Same I/O bare: a bare fastify route reading the account and the lead, appending one record (acks=all) and inserting one row (see measureSameIoFloor).',
    '',
    single.stages,
  ].join('\n');
}
