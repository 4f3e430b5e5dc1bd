import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import {
  createDb,
  createWorker,
  ensureDatabase,
  infrastructureConfig,
  loadConfig,
  systemClock,
  type WorkQueue,
} from '@leadline/runtime';
import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import { percentile } from './stats';

/**
 * The worker runtime beside graphile-worker and pg-boss, on one workload, in one run, each in a database
 * of its own on the local PostgreSQL. The two libraries are not dependencies of the project: install
 * them in a folder outside the repository and name its node_modules in QUEUE_EVAL_LIBRARIES:
 *
 *   npm install --prefix /tmp/queue-eval graphile-worker@0.18.0 pg-boss@12.38.0
 *   QUEUE_EVAL_LIBRARIES=/tmp/queue-eval/node_modules npx tsx bench/queue-eval.ts
 *
 * Workload, per candidate: 10,000 jobs over 100 keys, at most one job of a key running at once and a
 * key's jobs in order (the gateway's rule), 16 running at once, a handler that does nothing (so what is
 * measured is claiming and completing); all due at once (throughput), then 2,000 jobs falling due at
 * 200 a second (lateness: when a job started minus when it was due). Each run counts the jobs of a key
 * that ran beside each other or out of order (must be 0), the tables and functions it added, and the
 * connections it held.
 */

const JOBS = 10_000;
const KEYS = 100;
const CONCURRENCY = 16;
const SCHEDULED = 2000;
const PER_SECOND = 200;

interface Job {
  key: string;
  seq: number;
  due: number;
}

/** What the handler sees: a key's jobs must run one at a time and in order. */
function observer() {
  const running = new Map<string, number>();
  const lastSeq = new Map<string, number>();
  const lateness: number[] = [];
  let overlaps = 0;
  let inversions = 0;
  let done = 0;
  let waiters: (() => void)[] = [];
  return {
    async handle(job: Job) {
      lateness.push(Date.now() - job.due);
      const count = (running.get(job.key) ?? 0) + 1;
      running.set(job.key, count);
      if (count > 1) overlaps += 1;
      if ((lastSeq.get(job.key) ?? -1) > job.seq) inversions += 1;
      lastSeq.set(job.key, job.seq);
      await Promise.resolve();
      running.set(job.key, running.get(job.key)! - 1);
      done += 1;
      for (const wake of waiters.splice(0)) wake();
    },
    async until(count: number) {
      while (done < count) await new Promise<void>((resolve) => waiters.push(resolve));
    },
    reset() {
      lateness.length = 0;
      lastSeq.clear();
      done = 0;
      waiters = [];
    },
    get violations() {
      return `${overlaps} / ${inversions}`;
    },
    lateness,
  };
}

const jobsOf = (count: number, due: (index: number) => number): Job[] =>
  Array.from({ length: count }, (_, i) => ({
    key: `key-${i % KEYS}`,
    seq: Math.floor(i / KEYS),
    due: due(i),
  }));

interface Candidate {
  name: string;
  start(
    url: string,
    handle: (job: Job) => Promise<void>,
  ): Promise<{
    add(jobs: Job[]): Promise<void>;
    run(): Promise<void>;
    stop(): Promise<void>;
  }>;
}

/** The runtime's worker on a minimal leased table: a key's next job is claimable only when none of its jobs is leased. */
const ours: Candidate = {
  name: 'worker runtime (packages/runtime/src/worker)',
  async start(url, handle) {
    const db: Kysely<{ eval_jobs: unknown }> = createDb(url, { maxConnections: 4 }) as never;
    await sql`
      create table eval_jobs (id bigserial primary key, key text not null, seq int not null,
        run_at timestamptz not null, leased_until timestamptz, claim_token text, done_at timestamptz);
      create index eval_jobs_heads on eval_jobs (key, run_at, id) where done_at is null`.execute(db);
    type Row = {
      id: string;
      key: string;
      seq: number;
      run_at: Date;
      leased_until: Date;
      claim_token: string;
    };
    const queue: WorkQueue<Row> = {
      name: 'eval_jobs',
      async claim({ limit }) {
        const now = systemClock.now();
        const { rows } = await sql<Row>`
          with recursive keys(key) as (
            (select key from eval_jobs where done_at is null order by key limit 1)
            union all
            select (select key from eval_jobs where done_at is null and key > keys.key order by key limit 1)
            from keys where keys.key is not null
          ), heads as (
            select h.* from keys k cross join lateral (
              select id, run_at, leased_until from eval_jobs
              where key = k.key and done_at is null order by run_at, id limit 1
            ) h where k.key is not null
          ), picked as (
            select id from heads where run_at <= ${now} and (leased_until is null or leased_until <= ${now})
            order by run_at limit ${limit}
          )
          update eval_jobs j set leased_until = ${new Date(now.getTime() + 60_000)}, claim_token = ${randomUUID()}
          from picked where j.id = picked.id and (j.leased_until is null or j.leased_until <= ${now})
          returning j.*`.execute(db);
        return rows;
      },
      run: (row) => handle({ key: row.key, seq: row.seq, due: row.run_at.getTime() }),
      async settle(row) {
        await sql`update eval_jobs set done_at = now(), leased_until = null
          where id = ${row.id} and claim_token = ${row.claim_token}`.execute(db);
      },
      async release(rows, until) {
        await sql`update eval_jobs set leased_until = ${until ?? null}::timestamptz, claim_token = null
          where id = any(${rows.map((row) => row.id)}::bigint[])`.execute(db);
      },
      leaseEndOf: (row) => row.leased_until,
      async nextDue() {
        const { rows } = await sql<{ at: Date | null }>`
          select min(greatest(run_at, leased_until)) as at from eval_jobs where done_at is null`.execute(db);
        return rows[0]?.at ?? null;
      },
    };
    const worker = createWorker({
      queue,
      clock: systemClock,
      concurrency: CONCURRENCY,
      prefetch: CONCURRENCY,
      fairness: { keyOf: (row) => row.key, perKey: 1 },
      retry: {
        backoff: { kind: 'exponential', baseMs: 1000, maxMs: 30_000 },
        jitter: 'full',
        maxAttempts: 5,
        retryable: 'all',
      },
      budgetMs: 30_000,
      pollMs: 500,
    });
    return {
      async add(jobs) {
        for (let start = 0; start < jobs.length; start += 1000) {
          const chunk = jobs.slice(start, start + 1000);
          await sql`insert into eval_jobs (key, seq, run_at)
            select * from unnest(${chunk.map((j) => j.key)}::text[], ${chunk.map((j) => j.seq)}::int[],
              ${chunk.map((j) => new Date(j.due))}::timestamptz[])`.execute(db);
        }
      },
      async run() {
        worker.start();
        worker.wake();
      },
      async stop() {
        await worker.stop();
        await db.destroy();
      },
    };
  },
};

/** The little of each library's API used here (they are not installed in the repository). */
interface GraphileWorker {
  makeWorkerUtils(options: { connectionString: string }): Promise<{
    migrate(): Promise<void>;
    addJobs(
      specs: { identifier: string; payload: unknown; queueName: string; runAt: Date }[],
    ): Promise<unknown>;
    release(): Promise<void>;
  }>;
  run(options: Record<string, unknown>): Promise<{ stop(): Promise<void> }>;
  Logger: new (factory: () => () => void) => unknown;
}
interface PgBossModule {
  PgBoss: new (options: { connectionString: string }) => {
    on(event: 'error', listener: () => void): void;
    start(): Promise<void>;
    createQueue(name: string, options: { policy: string }): Promise<void>;
    send(name: string, data: object, options: { singletonKey: string; startAfter: Date }): Promise<unknown>;
    work<T>(
      name: string,
      options: { batchSize: number; burstWhenBatchFull: boolean; pollingIntervalSeconds: number },
      handler: (jobs: { data: T }[]) => Promise<void>,
    ): Promise<string>;
    stop(options: { graceful: boolean; wait: boolean }): Promise<void>;
  };
}

function library<T>(name: string): T {
  const from = process.env.QUEUE_EVAL_LIBRARIES;
  if (!from)
    throw new Error(
      'Set QUEUE_EVAL_LIBRARIES to the node_modules folder holding graphile-worker and pg-boss',
    );
  return createRequire(join(from, 'noop.js'))(name) as T;
}

/** graphile-worker: a named queue per key (its jobs run one at a time, in order). */
const graphileWorker: Candidate = {
  name: 'graphile-worker 0.18.0 (queueName per key)',
  async start(url, handle) {
    const gw = library<GraphileWorker>('graphile-worker');
    const utils = await gw.makeWorkerUtils({ connectionString: url });
    await utils.migrate();
    let runner: { stop(): Promise<void> } | undefined;
    return {
      async add(jobs) {
        for (let start = 0; start < jobs.length; start += 1000) {
          await utils.addJobs(
            jobs.slice(start, start + 1000).map((job) => ({
              identifier: 'eval',
              payload: job,
              queueName: job.key,
              runAt: new Date(job.due),
            })),
          );
        }
      },
      async run() {
        runner = await gw.run({
          connectionString: url,
          concurrency: CONCURRENCY,
          pollInterval: 500,
          noHandleSignals: true,
          logger: new gw.Logger(() => () => undefined),
          taskList: { eval: (payload: unknown) => handle(payload as Job) },
        });
      },
      async stop() {
        await runner?.stop();
        await utils.release();
      },
    };
  },
};

/**
 * pg-boss: a `key_strict_fifo` queue, the key as `singletonKey`. Its order within a key is creation
 * time, which jobs inserted in one statement share, so jobs are sent one by one (not measured). A worker
 * fetches 16 at a time and fetches again at once while batches come back full: with one job a fetch it
 * waits its polling interval after every job (32 jobs/s here with 16 workers).
 */
const pgBoss: Candidate = {
  name: 'pg-boss 12.38.0 (key_strict_fifo)',
  async start(url, handle) {
    const { PgBoss } = library<PgBossModule>('pg-boss');
    const boss = new PgBoss({ connectionString: url });
    boss.on('error', () => undefined);
    await boss.start();
    await boss.createQueue('eval', { policy: 'key_strict_fifo' });
    return {
      async add(jobs) {
        for (const job of jobs)
          await boss.send('eval', job, { singletonKey: job.key, startAfter: new Date(job.due) });
      },
      async run() {
        await boss.work<Job>(
          'eval',
          { batchSize: CONCURRENCY, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 },
          async (jobs) => void (await Promise.all(jobs.map((job) => handle(job.data)))),
        );
      },
      async stop() {
        await boss.stop({ graceful: true, wait: true });
      },
    };
  },
};

async function schemaAdded(admin: pg.Client) {
  const { rows } = await admin.query<{ tables: number; functions: number; schemas: string }>(`
    select (select count(*) from pg_tables where schemaname not in ('pg_catalog', 'information_schema'))::int as tables,
      (select count(*) from pg_proc p join pg_namespace n on n.oid = p.pronamespace
        where n.nspname not in ('pg_catalog', 'information_schema'))::int as functions,
      (select string_agg(nspname, ',') from pg_namespace
        where nspname not like 'pg\\_%' and nspname not in ('information_schema', 'public')) as schemas`);
  return rows[0]!;
}

async function evaluate(candidate: Candidate) {
  const base = loadConfig(infrastructureConfig);
  const url = new URL(base.DATABASE_URL);
  const database = `leadline_queue_eval_${randomUUID().slice(0, 8)}`;
  url.pathname = `/${database}`;
  await ensureDatabase(url.toString());
  const admin = new pg.Client({ connectionString: url.toString() });
  await admin.connect();
  const seen = observer();
  const instance = await candidate.start(url.toString(), (job) => seen.handle(job));
  let connections = 0;
  const sampler = setInterval(() => {
    void admin
      .query<{ n: number }>('select count(*)::int - 1 as n from pg_stat_activity where datname = $1', [
        database,
      ])
      .then(({ rows }) => (connections = Math.max(connections, rows[0]!.n)));
  }, 100);
  try {
    await instance.add(jobsOf(JOBS, () => Date.now() - 1000));
    const t0 = performance.now();
    await instance.run();
    await seen.until(JOBS);
    const backlogSeconds = (performance.now() - t0) / 1000;

    seen.reset();
    const start = Date.now() + 2000;
    await instance.add(jobsOf(SCHEDULED, (i) => start + Math.floor((i * 1000) / PER_SECOND)));
    await seen.until(SCHEDULED);
    const schema = await schemaAdded(admin);
    return {
      name: candidate.name,
      perSecond: JOBS / backlogSeconds,
      p50: percentile(seen.lateness, 50),
      p99: percentile(seen.lateness, 99),
      max: Math.max(...seen.lateness),
      violations: seen.violations,
      connections,
      schema,
    };
  } finally {
    clearInterval(sampler);
    await instance.stop();
    await admin.end();
    const adminUrl = new URL(base.DATABASE_URL);
    adminUrl.pathname = '/postgres';
    const drop = new pg.Client({ connectionString: adminUrl.toString() });
    await drop.connect();
    await drop.query(`drop database if exists "${database}" with (force)`);
    await drop.end();
  }
}

const candidates = [ours, graphileWorker, pgBoss].filter(
  (candidate) =>
    process.argv.length <= 2 || process.argv.slice(2).some((arg) => candidate.name.startsWith(arg)),
);
const lines = [
  `| ${JOBS} jobs over ${KEYS} keys, one at a time per key, ${CONCURRENCY} at once | backlog jobs/s | lateness p50 ms | p99 ms | max ms | a key's jobs side by side / out of order | connections | tables, functions (schemas) |`,
  '|---|---:|---:|---:|---:|---:|---:|---|',
];
for (const candidate of candidates) {
  const result = await evaluate(candidate);
  lines.push(
    `| ${result.name} | ${result.perSecond.toFixed(0)} | ${result.p50.toFixed(0)} | ${result.p99.toFixed(0)} | ${result.max.toFixed(0)} | ${result.violations} | ${result.connections} | ${result.schema.tables}, ${result.schema.functions} (${result.schema.schemas ?? 'public'}) |`,
  );
  console.log(lines.at(-1));
}
console.log(`\n${lines.join('\n')}`);
process.exit(0);
