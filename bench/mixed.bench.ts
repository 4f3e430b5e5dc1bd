import { newUuid } from '@leadline/runtime';
import { startFakeTwilio, type FakeTwilio } from '../packages/test-kit/src/fake-twilio';
import { startCluster, type Cluster } from '../system-test/cluster';
import { benchEnvironment } from './environment';
import { percentile } from './stats';

/**
 * A mixed load against two processes of every service (the multi-instance cluster the integration
 * test starts: two command APIs, projectors, inbound deciders, SMS gateways, sequencers, webhook
 * relays and AI agents with the offline responder), Twilio faked: concurrent clients spread over
 * several accounts import leads one by one and in bulk, post inbound SMS to /twilio/sms signed as
 * Twilio signs them, send manual messages and read leads and conversations, each request to either
 * API in turn. Every non-2xx answer and every transport error counts as an error.
 *
 * MIXED_BENCH_SECONDS (60), MIXED_BENCH_CLIENTS (16) and MIXED_BENCH_ACCOUNTS (8) size it; the
 * same load against one process of each service follows as the baseline (MIXED_BENCH_BASELINE=0
 * skips it).
 */
const SECONDS = Number(process.env.MIXED_BENCH_SECONDS ?? 60);
const CLIENTS = Number(process.env.MIXED_BENCH_CLIENTS ?? 16);
const ACCOUNTS = Number(process.env.MIXED_BENCH_ACCOUNTS ?? 8);
const BULK_SIZE = 50;
/** Leads imported per account before the clock starts: the recipients of manual messages. */
const SEEDED_LEADS = 20;

/** Each operation's share of the calls (out of the sum). */
const MIX = [
  ['import lead', 20],
  ['bulk import 50 leads', 4],
  ['inbound SMS', 20],
  ['manual message', 16],
  ['GET leads', 20],
  ['GET conversations', 20],
] as const;
type Operation = (typeof MIX)[number][0];

interface Account {
  id: string;
  number: string;
  leads: string[];
}

let phones = 0;
/** A fresh US number per call: no two imports or senders collide. */
const nextPhone = () => `+1512${String(2_000_000 + ++phones)}`;

function pick(random: number): Operation {
  const total = MIX.reduce((sum, [, weight]) => sum + weight, 0);
  let left = random * total;
  for (const [operation, weight] of MIX) {
    if (left < weight) return operation;
    left -= weight;
  }
  return MIX[0][0];
}

async function request(
  cluster: Cluster,
  instance: number,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  const response = await fetch(`${cluster.apiUrls[instance % cluster.apiUrls.length]}/v1${path}`, {
    method,
    headers: {
      'x-partner-key': cluster.partnerKey,
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  return { status: response.status, text: await response.text() };
}

async function inboundSms(cluster: Cluster, instance: number, to: string, from: string) {
  const body = `Is the rate still ${(3 + Math.random() * 4).toFixed(2)}%?`;
  const { status, text } = await cluster.inboundSms(instance, { to, from, body });
  return { status, text };
}

function run(
  cluster: Cluster,
  twilio: FakeTwilio,
  account: Account,
  operation: Operation,
  instance: number,
): Promise<{ status: number; text: string }> {
  const base = `/accounts/${account.id}`;
  switch (operation) {
    case 'import lead':
      return request(cluster, instance, 'POST', `${base}/leads`, { phone: nextPhone(), name: 'Mixed Lead' });
    case 'bulk import 50 leads':
      return request(cluster, instance, 'POST', `${base}/leads/bulk`, {
        leads: Array.from({ length: BULK_SIZE }, () => ({ phone: nextPhone() })),
      });
    case 'inbound SMS': {
      // Half from leads the account knows, half from new senders.
      const from =
        Math.random() < 0.5 ? account.leads[Math.floor(Math.random() * account.leads.length)]! : nextPhone();
      return inboundSms(cluster, instance, account.number, from);
    }
    case 'manual message': {
      const to = account.leads[Math.floor(Math.random() * account.leads.length)]!;
      return request(cluster, instance, 'POST', `${base}/conversations/${encodeURIComponent(to)}/messages`, {
        body: `Following up ${newUuid().slice(-8)}`,
      });
    }
    case 'GET leads':
      return request(cluster, instance, 'GET', `${base}/leads?limit=20`);
    case 'GET conversations':
      return request(cluster, instance, 'GET', `${base}/conversations?limit=20`);
  }
}

interface LoadResult {
  instances: number;
  startupSeconds: number;
  seconds: number;
  samples: Map<Operation, number[]>;
  errors: Map<Operation, number>;
  examples: string[];
  manualSent: number;
  manualAtTwilio: number;
  drainSeconds: number;
  smsAtTwilio: number;
}

/** The mixed load for SECONDS against a cluster of `instances` processes of each service. */
async function runLoad(instances: number): Promise<LoadResult> {
  const env = await benchEnvironment();
  const twilio = await startFakeTwilio();
  const startedAt = performance.now();
  const cluster = await startCluster({ config: env.config, twilio, instances });
  const startupSeconds = (performance.now() - startedAt) / 1000;
  try {
    const accounts: Account[] = [];
    for (let i = 0; i < ACCOUNTS; i++) {
      const created = await request(cluster, i, 'POST', '/accounts', { name: `Mixed ${i}` });
      if (created.status !== 201) throw new Error(`account: ${created.status} ${created.text}`);
      const { id, phone_number: number } = JSON.parse(created.text) as { id: string; phone_number: string };
      const leads = Array.from({ length: SEEDED_LEADS }, nextPhone);
      const imported = await request(cluster, i + 1, 'POST', `/accounts/${id}/leads/bulk`, {
        leads: leads.map((phone) => ({ phone })),
      });
      if (imported.status !== 200) throw new Error(`seed import: ${imported.status} ${imported.text}`);
      accounts.push({ id, number, leads });
    }

    const samples = new Map<Operation, number[]>(MIX.map(([operation]) => [operation, []]));
    const errors = new Map<Operation, number>(MIX.map(([operation]) => [operation, 0]));
    const examples: string[] = [];
    let manualSent = 0;
    const twilioBefore = twilio.messages.length;
    const started = performance.now();
    const deadline = started + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, client) => {
        for (let call = 0; performance.now() < deadline; call++) {
          // Each client moves over the accounts; requests alternate between the APIs.
          const account = accounts[(client + call) % accounts.length]!;
          const operation = pick(Math.random());
          const t0 = performance.now();
          try {
            const answer = await run(cluster, twilio, account, operation, client + call);
            samples.get(operation)!.push(performance.now() - t0);
            if (answer.status < 200 || answer.status > 299) {
              errors.set(operation, errors.get(operation)! + 1);
              if (examples.length < 5)
                examples.push(`${operation}: ${answer.status} ${answer.text.slice(0, 200)}`);
            } else if (operation === 'manual message') manualSent++;
          } catch (error) {
            samples.get(operation)!.push(performance.now() - t0);
            errors.set(operation, errors.get(operation)! + 1);
            if (examples.length < 5) examples.push(`${operation}: ${(error as Error).message}`);
          }
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;

    // Every accepted manual message reaches Twilio (AI replies and compliance answers come on top).
    const drainStarted = performance.now();
    const manualAtTwilio = () =>
      twilio.messages.slice(twilioBefore).filter((message) => message.body.startsWith('Following up')).length;
    while (manualAtTwilio() < manualSent && performance.now() - drainStarted < 120_000) {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    return {
      instances,
      startupSeconds,
      seconds,
      samples,
      errors,
      examples,
      manualSent,
      manualAtTwilio: manualAtTwilio(),
      drainSeconds: (performance.now() - drainStarted) / 1000,
      smsAtTwilio: twilio.messages.length - twilioBefore,
    };
  } finally {
    await cluster.close();
    await twilio.close();
    await env.dispose();
  }
}

const summary = (samples: number[], seconds: number, errors: number) =>
  `${samples.length} | ${(samples.length / seconds).toFixed(1)} | ${percentile(samples, 50).toFixed(1)} | ` +
  `${percentile(samples, 99).toFixed(1)} | ${errors}`;

/**
 * The load against two processes of each service, then (unless MIXED_BENCH_BASELINE=0) the same load
 * against one of each, in the same run: the baseline the two-instance figures are read against.
 */
export async function benchMixed(): Promise<string> {
  const results = [await runLoad(2)];
  if (process.env.MIXED_BENCH_BASELINE !== '0') results.push(await runLoad(1));
  const [twin, single] = results as [LoadResult, LoadResult | undefined];
  const lines = [
    `Mixed load (${SECONDS} s, ${CLIENTS} clients over ${ACCOUNTS} accounts, requests alternating between the APIs; ` +
      `cluster start-up ${twin.startupSeconds.toFixed(0)} s with two of each` +
      (single ? `, ${single.startupSeconds.toFixed(0)} s with one of each)` : ')'),
    '',
    '| operation | 2x calls | 2x ops/s | 2x p50 ms | 2x p99 ms | 2x errors |' +
      (single ? ' 1x calls | 1x ops/s | 1x p50 ms | 1x p99 ms | 1x errors | 2x/1x throughput |' : ''),
    '|---|---:|---:|---:|---:|---:|' + (single ? '---:|---:|---:|---:|---:|---:|' : ''),
  ];
  const row = (name: string, pick: (result: LoadResult) => [number[], number]) => {
    const [samples, errors] = pick(twin);
    let line = `| ${name} | ${summary(samples, twin.seconds, errors)} |`;
    if (single) {
      const [baseSamples, baseErrors] = pick(single);
      const ratio = samples.length / twin.seconds / (baseSamples.length / single.seconds);
      line += ` ${summary(baseSamples, single.seconds, baseErrors)} | ${ratio.toFixed(2)}x |`;
    }
    lines.push(line);
  };
  for (const [operation] of MIX) {
    row(operation, (result) => [result.samples.get(operation)!, result.errors.get(operation)!]);
  }
  row('all', (result) => [
    [...result.samples.values()].flat(),
    [...result.errors.values()].reduce((sum, count) => sum + count, 0),
  ]);
  lines.push('');
  for (const result of results) {
    const errors = [...result.errors.values()].reduce((sum, count) => sum + count, 0);
    lines.push(
      `- ${result.instances}x: errors ${errors}${errors === 0 ? ' (none)' : ''}; manual messages accepted ` +
        `${result.manualSent}, at Twilio ${result.manualAtTwilio} (${result.drainSeconds.toFixed(1)} s after the ` +
        `load ended); SMS at Twilio in all (manual, AI replies, compliance) ${result.smsAtTwilio}`,
      ...result.examples.map((example) => `  - error: ${example}`),
    );
  }
  return lines.join('\n');
}
