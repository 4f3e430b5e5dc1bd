import fastifyFormbody from '@fastify/formbody';
import type { NewEvent } from '@leadline/events';
import { createDb, createEventProducer, newUuid, partitionForKey, systemClock } from '@leadline/runtime';
import { startSmsGateway } from '@leadline/sms-gateway';
import { createLocalSmsSender } from '@leadline/telephony';
import Fastify from 'fastify';
import pg from 'pg';
import { comparisonTable, measure, measureAtRate, type Measurement } from './stats';
import { cpuWindow } from './cpu';
import { startBenchSystem, type BenchSystem } from './system';

const ACCOUNTS = 10;
const INBOUND = 600;
const INBOUND_PER_SECOND = 40;
/** Inbound SMS sent, at the same rate, before the measured ones. */
const INBOUND_WARM_UP = 200;
const BURST_CLIENTS = 16;
const SENDS = 1000;
const GATEWAY_CONCURRENCY = 4;
/** How long a row may go without progress before the run fails (its slowest row takes seconds). */
const STALLED_AFTER_MS = 60_000;

type ComparisonRow = Parameters<typeof comparisonTable>[0][number];
type BenchAccount = { id: string; phone_number: string };

/** What every row of the scenario shares: the system, its accounts and a pool for the raw floors. */
interface MessagingBench {
  system: BenchSystem;
  accounts: BenchAccount[];
  pool: pg.Pool;
}

const form = { 'content-type': 'application/x-www-form-urlencoded' };
const leadPhone = (i: number) => `+1512556${String(i % 200).padStart(4, '0')}`;
const warmUpPhone = (i: number) => `+1512557${String(i).padStart(4, '0')}`;

/**
 * Inbound webhook until the message is readable through the API, at a steady rate, beside a bare
 * fastify form route that inserts the message and reads it back; and the SMS gateway draining a
 * backlog of requests through the local provider, beside a raw floor doing what recording each send
 * minimally costs (one acks=all event and one row update) with the same number of workers.
 */
export async function benchMessaging(rows: string[] = []): Promise<string> {
  const runs = (row: 'inbound' | 'gateway') => rows.length === 0 || rows.includes(row);
  const system = await startBenchSystem();
  const { env, headers } = system;
  const accounts: BenchAccount[] = [];
  for (let i = 0; i < ACCOUNTS; i++) {
    const response = await fetch(`${system.baseUrl}/v1/accounts`, {
      method: 'POST',
      headers,
      // The gateway row's sends are proactive (sequence steps): with the default sending window its
      // leads' quiet hours (Central time, the 512 area code) would hold every one of them overnight.
      body: JSON.stringify({ name: `Bench ${i}`, sending_window: { enabled: false } }),
    });
    accounts.push((await response.json()) as BenchAccount);
  }
  const bench: MessagingBench = {
    system,
    accounts,
    pool: new pg.Pool({ connectionString: env.config.DATABASE_URL, max: 20 }),
  };

  const table: ComparisonRow[] = [];
  if (runs('inbound')) table.push(...(await inboundRows(bench)));
  if (runs('gateway')) table.push(await gatewayRow(bench));

  await bench.pool.end();
  await system.close();

  return [
    `Messaging (${ACCOUNTS} accounts; ${INBOUND} inbound at ${INBOUND_PER_SECOND}/s after ${INBOUND_WARM_UP} not counted, then ${INBOUND} more posted by ${BURST_CLIENTS} clients at once; a backlog of ${SENDS} sends, ${GATEWAY_CONCURRENCY} gateway workers; latency of a send = time until it is recorded since the backlog was appended)`,
    '',
    comparisonTable(table),
  ].join('\n');
}

/** The inbound rows: at a steady rate until readable, then a burst until decided; each beside its floor. */
async function inboundRows({ system, accounts, pool }: MessagingBench): Promise<ComparisonRow[]> {
  const readable = await inboundReadableTracker(system);
  // The first seconds of a started system are its warm-up (connections opened, code compiled, the
  // consumers' first fetches): run at the same rate on other numbers, and not counted.
  await measureAtRate('warm-up', INBOUND_WARM_UP, INBOUND_PER_SECOND, (i) =>
    readable.post(`SMwarm${i}`, accounts[i % ACCOUNTS]!, warmUpPhone(i), `Warm-up ${i}`),
  );
  const inbound = await measureAtRate(
    `inbound webhook → readable (${INBOUND_PER_SECOND}/s)`,
    INBOUND,
    INBOUND_PER_SECOND,
    (i) => readable.post(`SM${i}`, accounts[i % ACCOUNTS]!, leadPhone(i), `Hello ${i}`),
  );
  readable.stop();

  const bare = await startBareInboundRoute(pool);
  const rawInbound = await measureAtRate(
    `bare fastify form insert + select (${INBOUND_PER_SECOND}/s)`,
    INBOUND,
    INBOUND_PER_SECOND,
    async (i) => {
      const body = new URLSearchParams({ MessageSid: `SM${i}`, From: leadPhone(i), Body: `Hello ${i}` });
      await (await fetch(`${bare.url}/sms`, { method: 'POST', headers: form, body })).arrayBuffer();
      await (await fetch(`${bare.url}/messages/${encodeURIComponent(leadPhone(i))}`)).arrayBuffer();
    },
  );
  const burst = await inboundBurstRow({ system, accounts, pool }, bare.url);
  await bare.close();
  return [{ subject: inbound, baseline: rawInbound }, burst];
}

/**
 * Posts inbound SMS as Twilio would and returns once the API lists each one.
 *
 * A message in flight is readable once the projector has written it and the API lists it. Looking
 * through the API each time a batch is committed loads the API (and so the machine) more the further
 * the decider falls behind: with many messages in flight the reads swamped what they measured. So
 * each batch the projector commits on a partition is checked with one query for every message in
 * flight there, and a message found is then read once through the API (again until listed).
 */
async function inboundReadableTracker(system: BenchSystem) {
  const { services, headers } = system;
  const base = system.baseUrl;
  const partitionCount = (await services.admin.fetchTopicOffsets(services.topics.account)).length;
  const inFlight = new Map<number, Map<string, () => void>>();
  const checking = new Set<number>();
  const recheck = new Set<number>();
  async function checkPartition(partition: number) {
    const waiting = inFlight.get(partition);
    if (!waiting || waiting.size === 0) return;
    if (checking.has(partition)) return void recheck.add(partition);
    checking.add(partition);
    try {
      const rows = await services.db
        .selectFrom('messages')
        .select('provider_message_id as sid')
        .where('provider_message_id', 'in', [...waiting.keys()])
        .execute();
      for (const { sid } of rows) {
        if (sid === null) continue;
        waiting.get(sid)?.();
        waiting.delete(sid);
      }
    } finally {
      checking.delete(partition);
      if (recheck.delete(partition)) void checkPartition(partition);
    }
  }
  const unsubscribe = services.progress.subscribe((progress) => {
    for (const { topic, partition } of progress)
      if (topic === services.topics.account) void checkPartition(partition);
  });
  // Notifications lost to a reconnect are covered by a slow sweep.
  const sweep = setInterval(() => {
    for (const partition of inFlight.keys()) void checkPartition(partition);
  }, 100);
  const projected = (accountId: string, sid: string) =>
    new Promise<void>((resolve) => {
      const partition = partitionForKey(services.topics.account, accountId, partitionCount);
      const waiting = inFlight.get(partition) ?? new Map<string, () => void>();
      inFlight.set(partition, waiting);
      waiting.set(sid, resolve);
    });
  /** Posts one inbound SMS as Twilio would and returns once the API lists it. */
  const post = async (sid: string, account: BenchAccount, phone: string, text: string) => {
    const body = new URLSearchParams({
      MessageSid: sid,
      From: phone,
      To: account.phone_number,
      Body: text,
      NumMedia: '0',
    });
    // Waiting before posting: the message may be projected before the answer arrives.
    const written = projected(account.id, sid);
    const posted = await fetch(`${base}/twilio/sms`, { method: 'POST', headers: form, body });
    if (posted.status !== 200) throw new Error(`inbound answered ${posted.status}: ${await posted.text()}`);
    await posted.arrayBuffer();
    // Answered once kept; readable once the inbound decider and the projector have done their part.
    const deadline = Date.now() + 120_000;
    await Promise.race([
      written,
      new Promise((_, reject) =>
        setTimeout(() => reject(new Error('inbound message not projected within 120 s')), 120_000).unref(),
      ),
    ]);
    for (;;) {
      const read = await fetch(
        `${base}/v1/accounts/${account.id}/conversations/${encodeURIComponent(phone)}/messages?limit=5`,
        { headers },
      );
      const { messages } = (await read.json()) as { messages?: { body: string }[] };
      // Each conversation gets three of these messages (i, i + 200, i + 400): found among them, not
      // only as the newest, since a decider catching up decides the three together.
      if (messages?.some((message) => message.body === text)) return;
      if (Date.now() > deadline) throw new Error('inbound message not readable within 120 s of the answer');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  return {
    post,
    stop() {
      unsubscribe();
      clearInterval(sweep);
    },
  };
}

/** The inbound floor: a bare fastify form route that inserts the message, and one that reads it back. */
async function startBareInboundRoute(pool: pg.Pool) {
  await pool.query(
    'create table bench_inbound (sid text primary key, phone text, body text, at timestamptz default now())',
  );
  const bare = Fastify();
  await bare.register(fastifyFormbody);
  bare.post('/sms', async (request, reply) => {
    const { MessageSid, From, Body } = request.body as Record<string, string>;
    await pool.query(
      'insert into bench_inbound (sid, phone, body) values ($1, $2, $3) on conflict do nothing',
      [MessageSid, From, Body],
    );
    return reply.type('text/xml').send('<Response></Response>');
  });
  bare.get('/messages/:phone', async (request) => {
    const { rows } = await pool.query(
      'select * from bench_inbound where phone = $1 order by at desc limit 1',
      [(request.params as { phone: string }).phone],
    );
    return rows;
  });
  const url = await bare.listen({ port: 0, host: '127.0.0.1' });
  return { url, close: () => bare.close() };
}

/**
 * How fast the decider decides, rather than how fast SMS arrive: a burst posted by 16 clients at
 * once, timed until each is decided (its receipt marked), beside the bare route taking the same burst.
 */
async function inboundBurstRow(
  { system, accounts, pool }: MessagingBench,
  bareUrl: string,
): Promise<ComparisonRow> {
  const b0 = performance.now();
  const burstCpu = cpuWindow();
  await measure('inbound burst posting', INBOUND, BURST_CLIENTS, async (i) => {
    const account = accounts[i % ACCOUNTS]!;
    const body = new URLSearchParams({
      MessageSid: `SB${i}`,
      From: leadPhone(i),
      To: account.phone_number,
      Body: `Burst ${i}`,
      NumMedia: '0',
    });
    const posted = await fetch(`${system.baseUrl}/twilio/sms`, { method: 'POST', headers: form, body });
    if (posted.status !== 200) throw new Error(`inbound answered ${posted.status}: ${await posted.text()}`);
    await posted.arrayBuffer();
  });
  const decisions = await drained(
    `inbound burst → decided (${BURST_CLIENTS} clients)`,
    b0,
    async () => {
      const { rows } = await pool.query(
        "select count(*)::int as n from inbound_receipts where message_sid like 'SB%' and decided_at is not null",
      );
      return rows[0].n as number;
    },
    INBOUND,
    burstCpu,
  );
  const rawBurst = await measure(
    `bare fastify form insert (${BURST_CLIENTS} clients)`,
    INBOUND,
    BURST_CLIENTS,
    async (i) => {
      const body = new URLSearchParams({ MessageSid: `SB${i}`, From: leadPhone(i), Body: `Burst ${i}` });
      await (await fetch(`${bareUrl}/sms`, { method: 'POST', headers: form, body })).arrayBuffer();
    },
  );
  return { subject: decisions, baseline: rawBurst };
}

/** The gateway drains a backlog: requests for every account appended at once, sent through the local provider. */
async function gatewayRow({ system, accounts, pool }: MessagingBench): Promise<ComparisonRow> {
  const { env, services } = system;
  const gatewayDb = createDb(env.config.DATABASE_URL, { maxConnections: 4 });
  const gateway = await startSmsGateway({
    ...services,
    db: gatewayDb,
    sender: createLocalSmsSender(),
    clock: systemClock,
    groupId: `${env.config.TOPIC_PREFIX}leadline.sms-gateway`,
    concurrency: GATEWAY_CONCURRENCY,
    pollIntervalMs: 60_000,
  });
  const t0 = performance.now();
  const sendsCpu = cpuWindow();
  await Promise.all(
    accounts.map(async (account) => {
      const events: NewEvent[] = Array.from({ length: SENDS / ACCOUNTS }, (_, i) => ({
        type: 'message.outbound_requested',
        data: {
          message_id: newUuid(),
          phone: leadPhone(i),
          body: `Step ${i}`,
          source: 'sequence',
          sender_name: null,
        },
      }));
      await services.commands.append({
        stream: { topic: 'account', accountId: account.id },
        context: {
          partnerId: 'bench',
          actor: { kind: 'system', service: 'bench' },
          correlationId: newUuid(),
        },
        events,
      });
    }),
  );
  const sends = await drained(
    'sms gateway sends (local provider)',
    t0,
    async () => {
      const { rows } = await pool.query("select count(*)::int as n from sms_outbox where state = 'sent'");
      return rows[0].n as number;
    },
    SENDS,
    sendsCpu,
  );
  const rawSends = await rawSendFloor(system, pool);
  await gateway.stop();
  await gatewayDb.destroy();
  return { subject: sends, baseline: rawSends };
}

/** The gateway's floor: one acks=all event and one row update per send, with the gateway's workers. */
async function rawSendFloor({ env, services }: BenchSystem, pool: pg.Pool): Promise<Measurement> {
  const producer = createEventProducer(services.kafka);
  await producer.connect();
  const rawTopic = `${env.config.TOPIC_PREFIX}bench-raw`;
  await services.admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic: rawTopic, numPartitions: 8 }],
  });
  await pool.query('create table bench_outbox (id int primary key, state text)');
  await pool.query(`insert into bench_outbox select g, 'pending' from generate_series(0, ${SENDS - 1}) g`);
  const r0 = performance.now();
  const cpu = cpuWindow();
  let next = 0;
  const completions: number[] = [];
  await Promise.all(
    Array.from({ length: GATEWAY_CONCURRENCY }, async () => {
      for (let i = next++; i < SENDS; i = next++) {
        await producer.send({
          topic: rawTopic,
          acks: -1,
          messages: [{ key: `k${i % ACCOUNTS}`, value: `sent ${i}` }],
        });
        await pool.query("update bench_outbox set state = 'sent' where id = $1", [i]);
        completions.push(performance.now() - r0);
      }
    }),
  );
  await producer.disconnect();
  return {
    name: 'kafkajs send + one update, same workers',
    count: SENDS,
    seconds: Math.max(...completions) / 1000,
    samples: completions,
    cpu: cpu.stop(),
  };
}

/**
 * Polls a completion count until it reaches `count`, noting when each completion was first seen; the
 * CPU of `cpu`'s window, which the caller started with its load, ends here.
 */
async function drained(
  name: string,
  t0: number,
  completed: () => Promise<number>,
  count: number,
  cpu: ReturnType<typeof cpuWindow>,
): Promise<Measurement> {
  const samples: number[] = [];
  let progressedAt = performance.now();
  for (let seen = 0; seen < count;) {
    const now = await completed();
    const at = performance.now() - t0;
    if (now > seen) progressedAt = performance.now();
    for (; seen < now; seen++) samples.push(at);
    // A row that stops moving (sends held, a consumer stuck) fails the run instead of waiting forever.
    if (performance.now() - progressedAt > STALLED_AFTER_MS) {
      throw new Error(`${name}: ${seen} of ${count} done, none for ${STALLED_AFTER_MS / 1000} s`);
    }
    if (seen < count) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return { name, count, seconds: Math.max(...samples) / 1000, samples, cpu: cpu.stop() };
}
