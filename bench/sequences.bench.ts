import {
  connectCommandServices,
  createDb,
  createEventProducer,
  logCompression,
  newUuid,
  systemClock,
  type Clock,
} from '@leadline/runtime';
import { startSequencer } from '@leadline/sequencer';
import pg from 'pg';
import { comparisonTable, percentile, type Measurement } from './stats';
import { cpuPieces, cpuWindow } from './cpu';
import { profileWindowIfAsked } from './cpu-profile';
import { expectStatus, startBenchSystem, type BenchSystem } from './system';

const ACCOUNTS = 10;
const DUE_COUNTS = [1000, 10_000];
const IMPORT_RUNS = 5;
const IMPORT_SIZE = 1000;
/** The bare loop's claims: 4 workers each claiming 200 rows and sending them in one batch. */
const CLAIM_BATCH = 200;
const WORKERS = 4;
/** How many of the latest records' values the watch keeps: a 1,000-step window's, at three a step. */
const RECENT_RECORDS = 3000;

let phones = 0;
const nextPhone = () => `+1212${String(2_000_000 + ++phones).padStart(7, '0')}`;

async function newAccount(system: BenchSystem, name: string) {
  const body = (await expectStatus(
    await fetch(`${system.baseUrl}/v1/accounts`, {
      method: 'POST',
      headers: system.headers,
      // Quiet hours and the consent rule off: the bench measures the sequencer, not the clock on the
      // wall or the leads' consent.
      body: JSON.stringify({ name, sending_window: { enabled: false }, consent_required: false }),
    }),
    201,
  )) as { id: string };
  return body.id;
}

async function defaultSequence(system: BenchSystem, accountId: string, delayHours: number) {
  await expectStatus(
    await fetch(`${system.baseUrl}/v1/accounts/${accountId}/sequences`, {
      method: 'POST',
      headers: system.headers,
      body: JSON.stringify({
        name: 'Bench',
        is_default: true,
        steps: [{ type: 'fixed', message: 'Hi {{first_name|there}}', delay_hours: delayHours }],
      }),
    }),
    201,
  );
}

async function bulkImport(system: BenchSystem, accountId: string, count: number, autoSequence: boolean) {
  const leads = Array.from({ length: count }, () => ({ phone: nextPhone(), auto_sequence: autoSequence }));
  await expectStatus(
    await fetch(`${system.baseUrl}/v1/accounts/${accountId}/leads/bulk`, {
      method: 'POST',
      headers: system.headers,
      body: JSON.stringify({ leads }),
    }),
    200,
  );
}

async function until(probe: () => Promise<boolean>) {
  while (!(await probe())) await new Promise((resolve) => setTimeout(resolve, 10));
}

/**
 * When each account's `message.outbound_requested` records reached the log (`Date.now()` as a consumer
 * of the account topic saw them; the record key is the account id, so nothing is decoded), and how
 * many records of how many bytes each account's events made in all. Started before any account
 * exists, so it reads every record the measurements make.
 */
async function watchOutboundRequests(system: BenchSystem) {
  const { kafka, topics } = system.services;
  const arrivals = new Map<string, number[]>();
  const appended = new Map<string, { records: number; bytes: number }>();
  // The latest records' values as appended: the floor appends copies of a step's own records.
  const recent: Buffer[] = [];
  const consumer = kafka.consumer({
    groupId: `${system.env.config.TOPIC_PREFIX}bench-sequences-watch-${newUuid()}`,
  });
  await consumer.connect();
  await consumer.subscribe({ topic: topics.account, fromBeginning: false });
  const joined = new Promise<void>((resolve) => consumer.on(consumer.events.GROUP_JOIN, () => resolve()));
  await consumer.run({
    eachBatch: async ({ batch }) => {
      const at = Date.now();
      for (const message of batch.messages) {
        const accountId = message.key?.toString() ?? '';
        const made = appended.get(accountId) ?? { records: 0, bytes: 0 };
        appended.set(accountId, {
          records: made.records + 1,
          bytes: made.bytes + (message.value?.length ?? 0),
        });
        if (message.value) recent.push(message.value);
        if (recent.length > RECENT_RECORDS) recent.shift();
        if (message.headers?.['event-type']?.toString() !== 'message.outbound_requested') continue;
        const seen = arrivals.get(accountId);
        if (seen) seen.push(at);
        else arrivals.set(accountId, [at]);
      }
    },
  });
  await joined;
  return {
    /** Arrival times of the accounts' requests so far. */
    of: (accountIds: readonly string[]) => accountIds.flatMap((accountId) => arrivals.get(accountId) ?? []),
    /**
     * The records the accounts' events have made, and their bytes (values only), once none has
     * arrived for a moment: the watch has caught up with what was appended before.
     */
    async appended(accountIds: readonly string[]) {
      const total = () =>
        accountIds.reduce(
          (sum, accountId) => {
            const made = appended.get(accountId) ?? { records: 0, bytes: 0 };
            return { records: sum.records + made.records, bytes: sum.bytes + made.bytes };
          },
          { records: 0, bytes: 0 },
        );
      for (let last = total(); ;) {
        await new Promise((resolve) => setTimeout(resolve, 300));
        const now = total();
        if (now.records === last.records) return now;
        last = now;
      }
    },
    /** The values of the latest records appended (at most RECENT_RECORDS). */
    recent: () => [...recent],
    stop: () => consumer.disconnect(),
  };
}
type OutboundWatch = Awaited<ReturnType<typeof watchOutboundRequests>>;

/**
 * `count` enrollments whose step falls due at one instant, across ACCOUNTS accounts. The step is due
 * an hour after import; the sequencer runs on a clock moved forward so that, when it starts, the last
 * enrolled step has just fallen due: that instant is T, and lateness is the time from T to the step's
 * `message.outbound_requested` on the log (seen there by a consumer, not its `occurred_at`: that is
 * stamped when the step is decided, before its append).
 */
async function dueAtOnce(system: BenchSystem, watch: OutboundWatch, count: number) {
  const { env } = system;
  const perAccount = count / ACCOUNTS;
  const accounts: string[] = [];
  for (let i = 0; i < ACCOUNTS; i++) {
    const accountId = await newAccount(system, `Due ${count} ${i}`);
    await defaultSequence(system, accountId, 1);
    for (let done = 0; done < perAccount; done += 1000) {
      await bulkImport(system, accountId, Math.min(1000, perAccount - done), true);
    }
    accounts.push(accountId);
  }
  const db = system.services.db;
  const { latest } = await db
    .selectFrom('sequence_enrollments')
    .select((eb) => eb.fn.max('next_step_at').as('latest'))
    .where('account_id', 'in', accounts)
    .executeTakeFirstOrThrow();
  const dueAt = new Date(latest as unknown as Date).getTime();
  // Nothing is due until the sequencer is up; then its clock jumps to the instant everything is due.
  let offset = 0;
  const shifted: Clock = { now: () => new Date(Date.now() + offset) };
  const services = await connectCommandServices(
    { ...env.config, PROJECTION_WAIT_MS: 30_000 },
    'leadline-bench-sequencer',
    { clock: shifted },
  );
  const claimsDb = createDb(env.config.DATABASE_URL, { maxConnections: 4 });
  const sequencer = await startSequencer({
    ...services,
    db: claimsDb,
    clock: shifted,
    newId: newUuid,
    groupId: `${env.config.TOPIC_PREFIX}leadline.sequencer.${count}`,
    hourSeconds: 3600,
    pollIntervalMs: 50,
  });
  const before = await watch.appended(accounts);
  const name = `sequencer: ${count} steps due at once`;
  const profile = await profileWindowIfAsked(name);
  const fellDue = Date.now();
  const cpu = cpuWindow();
  offset = dueAt - fellDue;
  void sequencer.tick();
  await until(async () => watch.of(accounts).length >= count);
  const used = cpu.stop();
  await profile.stop();
  const samples = watch.of(accounts).map((at) => at - fellDue);
  await sequencer.stop();
  await claimsDb.destroy();
  await services.close();
  const after = await watch.appended(accounts);
  return {
    measurement: {
      name,
      count,
      seconds: Math.max(...samples) / 1000,
      samples,
      cpu: used,
    },
    step: {
      records: (after.records - before.records) / count,
      bytes: (after.bytes - before.bytes) / (after.records - before.records),
      values: watch.recent(),
    },
  };
}
/** What one step appended: records and mean bytes per record, and the latest records' values. */
type StepShape = Awaited<ReturnType<typeof dueAtOnce>>['step'];

/**
 * The floor: claiming the same number of rows with a bare SKIP LOCKED loop and appending what the
 * steps appended (as many records a row, copies of the steps' own, compressed by the same rule) in one
 * kafkajs sendBatch per claim, with the same workers and claim size; lateness is the time from the
 * start to the batch's acknowledgement.
 */
async function rawDue(system: BenchSystem, count: number, step: StepShape): Promise<Measurement> {
  const perRow = Math.max(1, Math.round(step.records));
  const { env, services } = system;
  const pool = new pg.Pool({ connectionString: env.config.DATABASE_URL, max: WORKERS + 1 });
  const table = `bench_due_${count}`;
  await pool.query(`create table ${table} (id int primary key, due_at timestamptz, state text)`);
  await pool.query(`insert into ${table} select g, now(), 'pending' from generate_series(0, ${count - 1}) g`);
  const topic = `${env.config.TOPIC_PREFIX}bench-due-${count}`;
  await services.admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 8 }] });
  const producer = createEventProducer(services.kafka);
  await producer.connect();
  const samples: number[] = [];
  const cpu = cpuWindow();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      for (;;) {
        const { rows } = await pool.query<{ id: number }>(
          `update ${table} set state = 'sent' where id in (
             select id from ${table} where state = 'pending' and due_at <= now()
             order by due_at, id limit ${CLAIM_BATCH} for update skip locked)
           returning id`,
        );
        if (rows.length === 0) return;
        const messages = rows.flatMap((row) =>
          Array.from({ length: perRow }, (_, record) => ({
            key: `k${row.id % ACCOUNTS}`,
            value: step.values[(row.id * perRow + record) % step.values.length]!,
          })),
        );
        const bytes = messages.reduce((sum, message) => sum + message.value.length, 0);
        await producer.sendBatch({
          acks: -1,
          compression: logCompression(bytes),
          topicMessages: [{ topic, messages }],
        });
        const at = performance.now() - started;
        for (let i = 0; i < rows.length; i++) samples.push(at);
      }
    }),
  );
  const used = cpu.stop();
  await producer.disconnect();
  await pool.end();
  return {
    name: `bare SKIP LOCKED claim + sendBatch of ${perRow} records a row`,
    count,
    seconds: Math.max(...samples) / 1000,
    samples,
    cpu: used,
  };
}

/** Bulk imports of 1,000 leads with auto_sequence until every step 0 is on the log, beside the import alone. */
async function importRuns(system: BenchSystem, watch: OutboundWatch) {
  const { env, services } = system;
  const claimsDb = createDb(env.config.DATABASE_URL, { maxConnections: 4 });
  const sequencer = await startSequencer({
    ...services,
    db: claimsDb,
    clock: systemClock,
    newId: newUuid,
    groupId: `${env.config.TOPIC_PREFIX}leadline.sequencer.imports`,
    hourSeconds: 3600,
    pollIntervalMs: 50,
  });
  const run = async (autoSequence: boolean) => {
    const samples: number[] = [];
    const cpu = cpuPieces();
    for (let i = 0; i < IMPORT_RUNS; i++) {
      const accountId = await newAccount(system, `Import ${autoSequence} ${i}`);
      await defaultSequence(system, accountId, 0);
      const started = performance.now();
      await cpu.around(async () => {
        await bulkImport(system, accountId, IMPORT_SIZE, autoSequence);
        if (autoSequence) await until(async () => watch.of([accountId]).length >= IMPORT_SIZE);
      });
      samples.push(performance.now() - started);
    }
    return { samples, cpu: cpu.used() };
  };
  const alone = await run(false);
  const withSequence = await run(true);
  await sequencer.stop();
  await claimsDb.destroy();
  const total = (samples: number[]) => samples.reduce((sum, value) => sum + value, 0) / 1000;
  return {
    subject: {
      name: `bulk import ${IMPORT_SIZE} + auto_sequence until every step 0 is on the log`,
      count: IMPORT_RUNS,
      seconds: total(withSequence.samples),
      samples: withSequence.samples,
      cpu: withSequence.cpu,
    },
    baseline: {
      name: 'the same bulk import alone',
      count: IMPORT_RUNS,
      seconds: total(alone.samples),
      samples: alone.samples,
      cpu: alone.cpu,
    },
  };
}

export async function benchSequences(): Promise<string> {
  const system = await startBenchSystem();
  const watch = await watchOutboundRequests(system);
  const rows: { subject: Measurement; baseline: Measurement }[] = [];
  const lateness: string[] = [];
  for (const count of DUE_COUNTS) {
    const { measurement: subject, step } = await dueAtOnce(system, watch, count);
    const baseline = await rawDue(system, count, step);
    rows.push({ subject, baseline });
    lateness.push(
      `- ${count} due: each step appended ${step.records.toFixed(2)} records of ${step.bytes.toFixed(0)} bytes on average (the floor appends copies of them)`,
    );
    lateness.push(
      `- ${count} due: lateness p50 ${percentile(subject.samples, 50).toFixed(0)} ms, p99 ` +
        `${percentile(subject.samples, 99).toFixed(0)} ms; ${(subject.count / subject.seconds).toFixed(0)} steps/s ` +
        `= ${(subject.count / subject.seconds / (baseline.count / baseline.seconds)).toFixed(2)}x the bare loop`,
    );
  }
  const imports = await importRuns(system, watch);
  rows.push(imports);
  await watch.stop();
  await system.close();
  return [
    `Sequences (${ACCOUNTS} accounts; the sequencer with its defaults (8 accounts at once, up to 1,000 steps of each per command); the bare loop: ${WORKERS} workers, claims of ${CLAIM_BATCH}; per-step latency = lateness from the instant all fell due; imports: ${IMPORT_RUNS} runs of ${IMPORT_SIZE} leads, per-run time)`,
    '',
    comparisonTable(rows),
    '',
    ...lateness,
    `- import + step 0: p50 ${(percentile(imports.subject.samples, 50) / percentile(imports.baseline.samples, 50)).toFixed(2)}x the import alone`,
  ].join('\n');
}
