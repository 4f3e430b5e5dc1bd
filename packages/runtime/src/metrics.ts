import { createServer, type Server } from 'node:http';
import type { Admin } from 'kafkajs';
import { sql, type Kysely } from 'kysely';
import { collectDefaultMetrics, Counter, Gauge, Histogram, register } from 'prom-client';
import type { Database } from './db/schema';
import type { CheckpointTable } from './log-records';
import { parkedCounts } from './parking';

/**
 * The process's Prometheus metrics. Labels name routes, stages, consumers, topics and partitions,
 * never an account, a partner or a phone: a scrape is not tenant data.
 */
export const metricsRegistry = register;
export const METRICS_CONTENT_TYPE = register.contentType;

let defaultsCollected = false;
/** Process metrics (CPU, memory, event loop lag, GC), once per process. */
export function collectProcessMetrics() {
  if (defaultsCollected) return;
  defaultsCollected = true;
  collectDefaultMetrics({ prefix: 'leadline_' });
}

const latencyBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const httpRequestSeconds = new Histogram({
  name: 'leadline_http_request_duration_seconds',
  help: 'HTTP requests by method, route template and status, with their latency.',
  labelNames: ['method', 'route', 'status_code'] as const,
  buckets: latencyBuckets,
});

/**
 * Where a command's time goes: `lock` (the stream's advisory locks), `offsets` (the high-watermark
 * lookup), `catch_up` (waiting for the projector before deciding), `decide`, `append` (encode and
 * send, acks=all), `read_your_writes` (waiting for the projector before answering).
 */
export const commandStageSeconds = new Histogram({
  name: 'leadline_command_stage_duration_seconds',
  help: 'Time spent in each stage of the decide-and-append path.',
  labelNames: ['stage'] as const,
  buckets: latencyBuckets,
});

export const modelRequestSeconds = new Histogram({
  name: 'leadline_ai_model_request_duration_seconds',
  help: 'Calls to the AI model, by outcome (ok, error), with their latency.',
  labelNames: ['outcome'] as const,
  buckets: [0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60],
});

/**
 * What became of each item a worker ran, per queue: `done`, `retried`, `exhausted` (its last attempt
 * failed), `not_retryable` (a final failure), `timed_out` (past its time budget: handed back), `released`
 * (handed back unfinished at shutdown).
 */
export const workerItems = new Counter({
  name: 'leadline_worker_items_total',
  help: 'Items run by a worker, per queue and outcome.',
  labelNames: ['queue', 'outcome'] as const,
});

export const workerItemSeconds = new Histogram({
  name: 'leadline_worker_item_duration_seconds',
  help: 'How long a worker ran each item, from its start to its outcome, per queue.',
  labelNames: ['queue'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
});

/** Times one stage of a command; the stage is recorded whether it succeeds or throws. */
export async function timeStage<T>(stage: string, work: () => Promise<T>): Promise<T> {
  const end = commandStageSeconds.startTimer({ stage });
  try {
    return await work();
  } finally {
    end();
  }
}

const SOURCE_TIMEOUT_MS = 2000;

type Labels = Record<string, string | number>;
type Source = (set: (labels: Labels, value: number) => void) => Promise<void>;

/**
 * A gauge read at scrape time (from Postgres, from the broker) rather than kept up to date by every
 * writer. Services add their sources; a source that fails leaves its series out of that scrape.
 */
function scrapedGauge(name: string, help: string, labelNames: string[]) {
  const sources = new Set<Source>();
  new Gauge({
    name,
    help,
    labelNames,
    async collect() {
      this.reset();
      // A broker or database that does not answer leaves its series out; the scrape still answers.
      await Promise.all(
        [...sources].map((source) => {
          let timer: NodeJS.Timeout | undefined;
          const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, SOURCE_TIMEOUT_MS)));
          const read = source((labels, value) => this.set(labels, value)).catch(() => undefined);
          return Promise.race([read, timeout]).finally(() => clearTimeout(timer));
        }),
      );
    },
  });
  return (source: Source) => {
    sources.add(source);
    return () => void sources.delete(source);
  };
}

const parkedRecordsSource = scrapedGauge(
  'leadline_parked_records',
  'Records a consumer could not apply (parked) and the later records of the same account held behind them.',
  ['consumer', 'status'],
);
const consumerLagSource = scrapedGauge(
  'leadline_consumer_lag_records',
  "Records on the log not yet applied by a consumer: the partition's high watermark minus its checkpoint.",
  ['consumer', 'topic', 'partition'],
);
const queueDepthSource = scrapedGauge(
  'leadline_queue_depth',
  'Work waiting in a queue (SMS to send, webhook deliveries to attempt, AI turns to take).',
  ['queue'],
);
const queueLatenessSource = scrapedGauge(
  'leadline_queue_lateness_seconds',
  'How long the most overdue item of a queue has been due (0 when nothing is overdue).',
  ['queue'],
);

/** Parked and held records of every consumer (they share the database): for any service's scrape. */
export function watchParkedRecords(db: Kysely<Database>) {
  return parkedRecordsSource(async (set) => {
    for (const [consumer, counts] of Object.entries(await parkedCounts(db))) {
      set({ consumer, status: 'parked' }, counts.parked);
      set({ consumer, status: 'held' }, counts.held);
    }
  });
}

/** A consumer's lag per partition, for the consumers that keep their checkpoints in Postgres. */
export function watchConsumerLag(deps: {
  db: Kysely<Database>;
  admin: Admin;
  topics: string[];
  consumer: string;
  checkpoints: CheckpointTable;
}) {
  return consumerLagSource(async (set) => {
    const { rows } = await sql<{ topic: string; partition: number; next_offset: string }>`
      select topic, partition, next_offset::text from ${sql.table(deps.checkpoints)}`.execute(deps.db);
    const checkpoint = new Map(rows.map((row) => [`${row.topic}/${row.partition}`, BigInt(row.next_offset)]));
    for (const topic of deps.topics) {
      for (const { partition, high } of await deps.admin.fetchTopicOffsets(topic)) {
        const lag = BigInt(high) - (checkpoint.get(`${topic}/${partition}`) ?? 0n);
        set({ consumer: deps.consumer, topic, partition }, Number(lag > 0n ? lag : 0n));
      }
    }
  });
}

/** A queue's depth and how overdue its oldest due item is, measured at each scrape. */
export function watchQueue(
  queue: string,
  measure: () => Promise<{ depth: number; latenessSeconds: number }>,
) {
  const stopDepth = queueDepthSource(async (set) => set({ queue }, (await measure()).depth));
  const stopLateness = queueLatenessSource(async (set) =>
    set({ queue }, Math.max(0, (await measure()).latenessSeconds)),
  );
  return () => {
    stopDepth();
    stopLateness();
  };
}

/** Upper bounds of the per-number queue histograms: messages waiting, and seconds to send them. */
export const NUMBER_QUEUE_DEPTH_BUCKETS = [1, 10, 100, 1000, 10_000] as const;
export const NUMBER_DRAIN_SECONDS_BUCKETS = [1, 10, 60, 300, 900, 3600, 4 * 3600] as const;

const numberQueueDepthSource = scrapedGauge(
  'leadline_sms_number_queue_depth',
  'Sending numbers with messages waiting, by how many wait (pending, not held), as a cumulative histogram read at scrape time: numbers with at most `le` waiting.',
  ['le'],
);
const numberDrainSource = scrapedGauge(
  'leadline_sms_number_drain_seconds',
  "Sending numbers with messages waiting, by how long their queue takes to leave at the number's pace, as a cumulative histogram read at scrape time: numbers that drain within `le` seconds.",
  ['le'],
);
const numberDrainMaxSource = scrapedGauge(
  'leadline_sms_number_drain_seconds_max',
  'The longest expected drain time of any sending number (0 when no number has messages waiting).',
  [],
);

/** Cumulative bucket counts of `values` (with `+Inf`), as a Prometheus histogram's buckets read. */
export function cumulativeBuckets(values: readonly number[], bounds: readonly number[]) {
  return [
    ...bounds.map((bound) => ({ le: String(bound), count: values.filter((value) => value <= bound).length })),
    { le: '+Inf', count: values.length },
  ];
}

/**
 * The SMS gateway's queues per sending number, without naming a number or an account: how many numbers
 * have how deep a queue, and how long each takes to drain at its pace.
 */
export function watchNumberQueues(measure: () => Promise<{ depth: number; drainSeconds: number }[]>) {
  const stops = [
    numberQueueDepthSource(async (set) => {
      const queues = await measure();
      for (const bucket of cumulativeBuckets(
        queues.map((queue) => queue.depth),
        NUMBER_QUEUE_DEPTH_BUCKETS,
      ))
        set({ le: bucket.le }, bucket.count);
    }),
    numberDrainSource(async (set) => {
      const queues = await measure();
      for (const bucket of cumulativeBuckets(
        queues.map((queue) => queue.drainSeconds),
        NUMBER_DRAIN_SECONDS_BUCKETS,
      ))
        set({ le: bucket.le }, bucket.count);
    }),
    numberDrainMaxSource(async (set) =>
      set({}, Math.max(0, ...(await measure()).map((queue) => queue.drainSeconds))),
    ),
  ];
  return () => stops.forEach((stop) => stop());
}

/** The text a scrape answers. */
export const scrapeMetrics = () => register.metrics();

/**
 * A `/metrics` listener for the services without an HTTP server of their own. Nothing else is
 * served; bind it to an address only the scraper reaches.
 */
export async function startMetricsServer(options: { port: number; host: string }): Promise<{
  port: number;
  close(): Promise<void>;
}> {
  collectProcessMetrics();
  const server: Server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('Not found\n');
      return;
    }
    scrapeMetrics().then(
      (text) => response.writeHead(200, { 'content-type': METRICS_CONTENT_TYPE }).end(text),
      () => response.writeHead(500, { 'content-type': 'text/plain' }).end('Metrics unavailable\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, resolve);
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : options.port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * What every service without an HTTP server exposes when `METRICS_PORT` is set: process metrics, the
 * parked records of every consumer, and whatever its own parts watch (lag, queues, model latency).
 */
export async function serveServiceMetrics(
  config: { METRICS_PORT?: number | undefined; METRICS_HOST: string },
  db: Kysely<Database>,
): Promise<{ close(): Promise<void> } | undefined> {
  if (config.METRICS_PORT === undefined) return undefined;
  let server: Awaited<ReturnType<typeof startMetricsServer>>;
  try {
    server = await startMetricsServer({ port: config.METRICS_PORT, host: config.METRICS_HOST });
  } catch (error) {
    // Metrics are not worth stopping a service that sends SMS or applies the log: say so loudly.
    console.error(
      `metrics: cannot listen on ${config.METRICS_HOST}:${config.METRICS_PORT}; none served`,
      error,
    );
    return undefined;
  }
  const unwatchParked = watchParkedRecords(db);
  return {
    async close() {
      unwatchParked();
      await server.close();
    },
  };
}
