import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projections, rebuild } from '@leadline/projector';
import { gatewayConfigSchema, sendingGraceMs } from '@leadline/sms-gateway';
import { newUuid, type CommandServices } from '@leadline/runtime';
import {
  createTestEnvironment,
  eventually,
  postgresBinaries,
  startFakeTwilio,
  startPrivatePostgres,
  startReceiver,
  type FakeTwilio,
  type PrivatePostgres,
  type Receiver,
  type TestEnvironment,
} from '@leadline/test-kit';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../src/partners/api-keys';
import { createPartner } from '../src/partners/partners';
import { accountingReport, accountWrites } from '../../../system-test/accounting';
import { httpPartnerClient, type PartnerClient } from '../../../system-test/client';
import { startCluster, type Cluster } from '../../../system-test/cluster';
import { openEventStream, type EventStreamReader } from '../../../system-test/event-stream';
import { readModelSnapshot } from '../../../system-test/log';
import { startWriteLoop } from '../../../system-test/write-loop';

/**
 * PostgreSQL restarted under a write loop of 16 clients, every service a process of its own on a
 * cluster owned by this file (the shared server, which the schema registry uses too, is never touched).
 * Nothing is restarted but the database: every pool, LISTEN connection and wake-up must recover alone.
 */
const binaries = postgresBinaries();
/**
 * `fast`: every session ended by the server and a clean shutdown, as a planned restart or a switchover
 * does; `immediate` (a crash, recovered from the WAL on start) passes the same test.
 */
const MODE = 'fast' as 'fast' | 'immediate';
/** How long the database stays down: long enough that every pool and listener sees it gone. */
const DOWN_MS = 3_000;
/** How long the loop keeps writing once the database is back. */
const WRITING_AFTER_MS = 10_000;

let database: PrivatePostgres;
let env: TestEnvironment;
let twilio: FakeTwilio;
let receiver: Receiver;
let caDir: string;
let cluster: Cluster;

beforeAll(async () => {
  if (!binaries) return;
  database = await startPrivatePostgres();
  env = await createTestEnvironment();
  // The product's database on the private server; Kafka and the registry stay the shared ones.
  const url = new URL(database.url);
  url.pathname = '/leadline';
  env.config.DATABASE_URL = url.toString();
  twilio = await startFakeTwilio();
  receiver = await startReceiver();
  caDir = mkdtempSync(join(tmpdir(), 'leadline-ca-'));
  writeFileSync(join(caDir, 'receiver.pem'), receiver.ca);
  cluster = await startCluster({
    config: env.config,
    twilio,
    // One process of each service: what is tested is each one's recovery, not their sharing.
    instances: 1,
    env: { NODE_EXTRA_CA_CERTS: join(caDir, 'receiver.pem') },
  });
}, 240_000);
afterAll(async () => {
  await cluster?.close();
  await receiver?.close();
  await twilio?.close();
  if (caDir) rmSync(caDir, { recursive: true, force: true });
  await env?.dispose();
  await database?.stop();
}, 60_000);

/**
 * Waits until every consumer's checkpoints (each table, each partition it has seen) reach the log's end
 * as it is now; returns that end, one `topic partition offset` line each.
 */
async function consumersCaughtUp(services: CommandServices): Promise<string> {
  const tables = [
    'read_model.projection_checkpoints',
    'public.webhook_relay_checkpoints',
    'public.inbound_decider_checkpoints',
    'public.sms_gateway_checkpoints',
    'public.sequencer_checkpoints',
    'public.ai_agent_checkpoints',
  ];
  const ends = new Map<string, bigint>();
  for (const topic of [services.topics.account, services.topics.partner]) {
    for (const end of await services.admin.fetchTopicOffsets(topic))
      ends.set(`${topic} ${end.partition}`, BigInt(end.high));
  }
  await eventually(
    async () => {
      const behind: string[] = [];
      for (const table of tables) {
        const { rows } = await sql<{ topic: string; partition: number; next_offset: string }>`
          select topic, partition, next_offset from ${sql.table(table)}`.execute(services.db);
        for (const row of rows) {
          const end = ends.get(`${row.topic} ${row.partition}`);
          if (end !== undefined && BigInt(row.next_offset) < end)
            behind.push(`${table} ${row.topic}[${row.partition}] at ${row.next_offset} of ${end}`);
        }
      }
      return behind.length === 0 ? true : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 500, message: 'a consumer never caught up with the log' },
  );
  return [...ends].map(([partition, end]) => `${partition} ${end}`).join('\n');
}

/** The cluster's gateway process's grace for a send in flight, from its configuration's default. */
const SENDING_GRACE_MS = sendingGraceMs({
  SMS_SEND_TIMEOUT_SECONDS: gatewayConfigSchema.shape.SMS_SEND_TIMEOUT_SECONDS.parse(undefined),
});

/**
 * The sends the gateway is still working on are done: none waiting, none settled and not yet on the
 * log, none in flight for less than the gateway's grace (a pass still under way settles it). One in
 * flight longer was interrupted by the restart (its settlement failed with the database down); the
 * gateway's reconciliation settles it from Twilio's status callback, which the fake does not send, or
 * after ten minutes, so it stays as it is through the snapshot and the rebuild.
 */
function gatewayDone(services: CommandServices) {
  return eventually(
    async () => {
      const { rows } = await sql<{ open: number }>`
        select count(*)::int as open from sms_outbox
        where state = 'pending' or (report is not null and reported_at is null)
          or (state = 'sending' and sending_at > now() - make_interval(secs => ${SENDING_GRACE_MS / 1000}))`.execute(
        services.db,
      );
      return rows[0]!.open === 0 ? true : undefined;
    },
    {
      timeoutMs: SENDING_GRACE_MS + 30_000,
      intervalMs: 500,
      message: 'the gateway never finished its sends',
    },
  );
}

/**
 * The read models once the gateway is done and every consumer has caught up with a log that no longer
 * grows: services still append after the loop stops (the gateway's sends, Twilio's status callbacks),
 * and a snapshot taken before the projector applied those would differ from a rebuild for no fault of
 * the restart. A quiet log alone does not say the gateway is done: a send goes on the log after its
 * call, and a pass may still be under way.
 */
async function settledReadModels(services: CommandServices) {
  await gatewayDone(services);
  for (let attempt = 0; ; attempt++) {
    const end = await consumersCaughtUp(services);
    const snapshot = await readModelSnapshot(services.db);
    if ((await consumersCaughtUp(services)) === end) return snapshot;
    if (attempt === 10) throw new Error('the log never stopped growing after the loop');
  }
}

/** Reads the stream until a change names `phone` among the account's leads (or asks for a resync). */
async function changeOf(stream: EventStreamReader, phone: string) {
  for (;;) {
    const event = await stream.next();
    const leads = (event.data.leads ?? []) as string[];
    if (event.event === 'change' && (leads.includes(phone) || event.data.resync)) return event;
  }
}

describe.skipIf(!binaries)('PostgreSQL restarted under a write loop', () => {
  it('refuses with 503 and Retry-After while it is down, loses and doubles nothing, and every service recovers without a restart', async () => {
    const partner = httpPartnerClient(cluster.apiUrls[0]!, cluster.partnerKey);
    // No consent, no quiet hours: every acknowledged message is sent, whatever the time of day.
    const newAccount = async (client: PartnerClient, name: string) => {
      const created = await client.post('/accounts', {
        name,
        consent_required: false,
        sending_window: { enabled: false },
      });
      expect(created.status).toBe(201);
      return created.body.id as string;
    };
    const accounts: string[] = [];
    for (let n = 0; n < 8; n++) accounts.push(await newAccount(partner, `Restart ${n}`));

    // A quiet partner of its own: a webhook on its leads and the dashboard's live updates of its account.
    const quietKey = generateApiKey();
    await createPartner({ ...cluster.services, newId: newUuid }, 'Quiet partner', quietKey);
    const quiet = httpPartnerClient(cluster.apiUrls[0]!, quietKey);
    const hook = await quiet.post('/webhooks', {
      url: receiver.url('/restart'),
      events: ['lead.created'],
      secret: 'whsec_postgres_restart_0123456789',
    });
    expect(hook.status).toBe(201);
    const quietAccount = await newAccount(quiet, 'Quiet');
    const token = await quiet.post(`/accounts/${quietAccount}/embed-token`, {});
    expect(token.status).toBe(200);
    const stream = await openEventStream(cluster.apiUrls[0]!, quietAccount, token.body.token);
    expect((await stream.next()).event).toBe('ready');
    const delivered = (phone: string) =>
      eventually(
        async () =>
          receiver
            .requests('/restart')
            .some((request) => JSON.parse(request.body.toString()).data.phone === phone) || undefined,
        { timeoutMs: 60_000, message: `the webhook for ${phone} never arrived` },
      );
    // Before the restart: both work.
    expect((await quiet.post(`/accounts/${quietAccount}/leads`, { phone: '+15125550001' })).status).toBe(201);
    await changeOf(stream, '+15125550001');
    await delivered('+15125550001');

    const loop = startWriteLoop({ partner, accounts, clients: 16 });
    // When the database was stopped, and when it took sessions again (performance.now(), as the loop's).
    const times = { stopped: 0, back: 0 };
    try {
      await loop.acknowledgedMore(40);
      times.stopped = performance.now();
      await database.restart(MODE, DOWN_MS);
      times.back = performance.now();
      await loop.acknowledgedMore(40, 90_000);
      // After the restart, while the loop writes: a write is read back, its live update arrives on the
      // stream opened before the restart, and its webhook is delivered.
      const imported = await quiet.post(`/accounts/${quietAccount}/leads`, { phone: '+15125550002' });
      expect(imported.status).toBe(201);
      const read = await quiet.get(`/accounts/${quietAccount}/leads/%2B15125550002`);
      expect(read.status).toBe(200);
      await changeOf(stream, '+15125550002');
      await delivered('+15125550002');
      const left = WRITING_AFTER_MS - (performance.now() - times.back);
      if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
    } finally {
      await loop.stop();
      stream.close();
    }

    // No service was restarted: each recovered by itself.
    expect(cluster.exited()).toEqual([]);
    await consumersCaughtUp(cluster.services);

    const accounting = await accountWrites(cluster.services, loop.outcomes, accounts);
    const { acknowledged, refused, onTheLog, inReadModels } = accounting;
    expect(accounting.wrongRefusals).toEqual([]);
    expect(accounting.misplaced).toEqual([]);
    expect(accounting.duplicateIds).toEqual([]);
    const expected = acknowledged.reduce((sum, o) => sum + o.phones.length + (o.messageId ? 1 : 0), 0);
    expect(onTheLog).toBe(expected);
    expect(inReadModels).toBe(onTheLog);
    // An acknowledged import not read back met the restart on its GET: a 503, never a 500.
    const unread = acknowledged.filter((o) => o.op !== 'message' && o.readBack !== true);
    expect(
      unread.filter((o) => o.readStatus !== 503).map((o) => `${o.phones[0]} read ${o.readStatus}`),
    ).toEqual([]);
    // The restart was felt: writes were refused, and acknowledged both before and after it.
    expect(refused.length).toBeGreaterThan(0);

    // Each acknowledged message reached Twilio exactly once, and no refused one did.
    const sent = (o: { to?: string; body?: string }) =>
      twilio.messages.filter((m) => m.to === o.to && m.body === o.body).length;
    const messages = loop.outcomes.filter((o) => o.op === 'message');
    await eventually(
      async () => (messages.every((o) => sent(o) === (o.status < 300 ? 1 : 0)) ? true : undefined),
      {
        timeoutMs: 60_000,
        message: `messages at Twilio: ${messages
          .filter((o) => sent(o) !== (o.status < 300 ? 1 : 0))
          .map((o) => `${o.body} to ${o.to} answered ${o.status}, sent ${sent(o)}`)
          .join('; ')}`,
      },
    );

    // Nothing was applied twice: the read models (their counters included) equal a rebuild.
    const live = await settledReadModels(cluster.services);
    await rebuild({
      ...cluster.services,
      databaseUrl: env.config.DATABASE_URL,
      groupPrefix: env.config.TOPIC_PREFIX,
      projections,
    });
    expect(await readModelSnapshot(cluster.services.db)).toEqual(live);

    // How long after the database took sessions again the first write sent after that was acknowledged.
    const firstAfter = Math.min(
      ...acknowledged.filter((o) => o.sentAt >= times.back).map((o) => o.answeredAt - times.back),
    );
    console.warn(
      accountingReport(`PostgreSQL restarted (${MODE}) under 16 writers:`, accounting, [
        `  the database was down ${Math.round(times.back - times.stopped)} ms (stopping, ${DOWN_MS} ms stopped, starting); the first write sent once it was back was acknowledged after ${Math.round(firstAfter)} ms`,
        `  every consumer caught up with the log; messages at Twilio exactly once (${messages.filter((o) => o.status < 300).length}); read models equal to a rebuild`,
        `  acknowledged imports not read back at once (their GET met the restart, 503): ${unread.length}`,
        `  after the restart: the live update and the webhook of a new lead arrived; no service restarted`,
      ]),
    );
  }, 300_000);
});
