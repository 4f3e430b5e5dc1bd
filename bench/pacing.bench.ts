import type { EventToAppend } from '@leadline/runtime';
import {
  createDb,
  newUuid,
  partitionForKey,
  scrapeMetrics,
  type Clock,
  type Timers,
} from '@leadline/runtime';
import { startSmsGateway } from '@leadline/sms-gateway';
import { createLocalSmsSender, type SmsSender } from '@leadline/telephony';
import pg from 'pg';
import { percentile } from './stats';
import { startBenchSystem } from './system';

const STEPS = Number(process.env.PACING_BENCH_STEPS ?? 3000);
/**
 * How many times faster than the wall the gateway's clock runs: 3,000 messages at 1 a second are
 * 3,000 s of the gateway's time, 300 s of the bench's at 10x. Everything the gateway decides (its pace,
 * the sending window, the next slot) is on that clock; the spacing is measured on it too.
 */
const SCALE = Number(process.env.PACING_BENCH_SCALE ?? 10);
const OTHER_ACCOUNT_SAMPLES = 20;
/** 20:05 in New York, where the leads (212) are: the window closes at 21:00, 55 minutes later. */
const START = new Date('2026-03-03T01:05:00.000Z');
const WINDOW_CLOSES = new Date('2026-03-03T02:00:00.000Z');

/** A clock `SCALE` times faster than the wall, from START. */
function scaledClock(): Clock {
  const wallStart = Date.now();
  return { now: () => new Date(START.getTime() + (Date.now() - wallStart) * SCALE) };
}

/** Timers at the scaled clock's pace: a pass waiting a second of its clock for a slot waits 1/SCALE s. */
const scaledTimers: Timers = {
  after(ms, fire) {
    const timer = setTimeout(fire, ms / SCALE);
    return () => clearTimeout(timer);
  },
};

/**
 * `pacing`: STEPS sequence steps due at once for one number paced at 1 message a second, on a clock
 * SCALE times faster than the wall; checks each left at least 1 s (−10%) after the one before on the
 * gateway's clock, that none left after the sending window closed (what could not leave is held for
 * the next window), and times another account's single messages, sent meanwhile, from request to
 * sent on the wall clock (p99 goal under 2 s).
 */
export async function benchPacing(): Promise<string> {
  const system = await startBenchSystem();
  const { env, services } = system;
  const gatewayDb = createDb(env.config.DATABASE_URL, { maxConnections: 8 });
  const pool = new pg.Pool({ connectionString: env.config.DATABASE_URL, max: 4 });
  const clock = scaledClock();
  const local = createLocalSmsSender();
  const sentAt: { from: string; at: Date }[] = [];
  const sender: SmsSender = {
    send(message) {
      sentAt.push({ from: message.from, at: clock.now() });
      return local.send(message);
    },
  };
  const context = {
    partnerId: 'bench',
    actor: { kind: 'system' as const, service: 'bench' },
    correlationId: 'c',
  };
  const append = (accountId: string, events: EventToAppend[]) =>
    services.commands.append({ stream: { topic: 'account', accountId }, context, events });
  const account = (id: string, phone: string) =>
    append(id, [
      {
        type: 'account.created',
        data: {
          name: id,
          company_name: id,
          slug: id,
          phone_number: phone,
          phone_number_provisioned: true,
          forwarding_number: null,
          branding: { logo_url: null, accent_color: null },
          metadata: {},
        },
      },
    ]);
  const request = (phone: string, body: string, source: 'sequence' | 'manual') => ({
    type: 'message.outbound_requested' as const,
    data: {
      message_id: newUuid(),
      phone,
      body,
      source,
      sender_name: null,
      ...(source === 'sequence' && {
        sequence_step: { enrollment_id: newUuid(), sequence_id: 'bench', step_order: 0 },
      }),
    },
  });
  // The other account on another partition of the log: one that shares the backlog's partition waits,
  // for each decision, until the projector has caught up with that partition (the decide-and-append
  // path's consistency), which a backlog's outcomes keep busy; that is the log's, not the pace's.
  const partitions = (await services.admin.fetchTopicOffsets(services.topics.account)).length;
  const burstPartition = partitionForKey(services.topics.account, 'acc-burst', partitions);
  let otherId = 'acc-other';
  for (let i = 0; partitionForKey(services.topics.account, otherId, partitions) === burstPartition; i++)
    otherId = `acc-other-${i}`;
  await account('acc-burst', '+15125558001');
  await account(otherId, '+15125558002');

  const gateway = await startSmsGateway({
    ...services,
    db: gatewayDb,
    sender,
    clock,
    timers: scaledTimers,
    groupId: `${env.config.TOPIC_PREFIX}leadline.sms-gateway`,
    // The idle loop sleeps by the wall: look often, so a slot 1/SCALE s away is not overslept.
    pollIntervalMs: 20,
    pacing: { messagesPerSecond: 1, brandDailyCap: null },
  });

  const burst = Array.from({ length: STEPS }, (_, i) =>
    request(`+1212555${String(i).padStart(4, '0')}`, `Step ${i}`, 'sequence'),
  );
  for (let i = 0; i < burst.length; i += 500) await append('acc-burst', burst.slice(i, i + 500));

  const count = async (where: string) =>
    (
      await pool.query(
        `select count(*)::int as n from sms_outbox where account_id = 'acc-burst' and ${where}`,
      )
    ).rows[0].n as number;
  const otherLatencies: number[] = [];
  const others = (async () => {
    for (let i = 0; i < OTHER_ACCOUNT_SAMPLES; i++) {
      await new Promise((resolve) => setTimeout(resolve, 3000));
      const single = request('+15125559000', `Other ${i}`, 'manual');
      const t0 = performance.now();
      await append(otherId, [single]);
      for (;;) {
        const { rows } = await pool.query('select state from sms_outbox where message_id = $1', [
          single.data.message_id,
        ]);
        if (rows[0]?.state === 'sent') break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      otherLatencies.push(performance.now() - t0);
    }
  })();
  const wall0 = performance.now();
  for (;;) {
    const settled =
      (await count(`state = 'sent'`)) + (await count(`state = 'pending' and hold_reason = 'quiet_hours'`));
    if (settled >= STEPS) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const wallSeconds = (performance.now() - wall0) / 1000;
  await others;
  await gateway.stop();

  const burstTimes = sentAt.filter((sent) => sent.from === '+15125558001').map((sent) => sent.at.getTime());
  const gaps = burstTimes.slice(1).map((at, i) => (at - burstTimes[i]!) / 1000);
  const held = await count(`state = 'pending' and hold_reason = 'quiet_hours'`);
  const outside = burstTimes.filter((at) => at >= WINDOW_CLOSES.getTime()).length;
  const tooClose = gaps.filter((gap) => gap < 0.9).length;
  await pool.end();
  await gatewayDb.destroy();
  await system.close();

  // The gateway's passes (worker items of the outbox queue): how they ended, and the longest, on the wall,
  // against the worker's budget for one (half the 60 s lease).
  const metrics = await scrapeMetrics();
  const passes = [
    ...metrics.matchAll(/^leadline_worker_items_total\{queue="sms_outbox",outcome="(\w+)"\} (\d+)/gm),
  ]
    .map(([, outcome, n]) => `${outcome} ${n}`)
    .join(', ');
  const longest = [
    ...metrics.matchAll(
      /^leadline_worker_item_duration_seconds_bucket\{le="([^"]+)",queue="sms_outbox"\} (\d+)/gm,
    ),
  ].map(([, le, n]) => ({ le, n: Number(n) }));
  const total = longest.at(-1)?.n ?? 0;
  const longestBucket = longest.find((bucket) => bucket.n === total)?.le;
  const f = (n: number) => n.toFixed(3);
  return [
    `pacing: ${STEPS} sequence steps due at once for one number at 1 message/s, on a clock ${SCALE}x the wall`,
    `(the gateway's time: from 20:05 in the leads' zone; its window closes at 21:00), local provider`,
    `  sent ${burstTimes.length}, held for the next window ${held}, sent after the window closed ${outside}`,
    `  spacing on the gateway's clock (s): min ${f(Math.min(...gaps))} p50 ${f(percentile(gaps, 50))} p99 ${f(percentile(gaps, 99))} max ${f(Math.max(...gaps))}; under 0.9 s: ${tooClose}`,
    `  drained in ${wallSeconds.toFixed(1)} s of wall time (${(wallSeconds * SCALE).toFixed(0)} s of the gateway's)`,
    `  the gateway's passes: ${passes}; every one within ${longestBucket} s of the wall (budget 30 s)`,
    `  another account's single message, request to sent (wall ms, ${otherLatencies.length} samples): p50 ${percentile(otherLatencies, 50).toFixed(0)} p99 ${percentile(otherLatencies, 99).toFixed(0)} max ${Math.max(...otherLatencies).toFixed(0)}`,
    `  verdict: spacing ${tooClose === 0 ? 'ok' : 'FAILED'}, window ${outside === 0 ? 'ok' : 'FAILED'}, other account ${percentile(otherLatencies, 99) < 2000 ? 'ok' : 'FAILED'}`,
  ].join('\n');
}
