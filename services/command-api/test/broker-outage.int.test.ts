import {
  accountEvents,
  eventually,
  logSize,
  startPrivateKafka,
  testDocuments,
  type PrivateKafka,
} from '@leadline/test-kit';
import net from 'node:net';
import {
  createCommandBus,
  createDb,
  createKafka,
  createProjectionProgress,
  createPool,
  createSecretBox,
  DEVELOPMENT_WEBHOOK_KEY,
  newUuid,
  systemClock,
  type CommandBus,
} from '@leadline/runtime';
import type { Admin } from 'kafkajs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../src/app';
import { eventLogReadiness } from '../src/http/readiness';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

let system: TestSystem;
let key: string;
let partner: PartnerClient;
let silent: net.Server;
const sockets = new Set<net.Socket>();
const cleanups: (() => Promise<unknown>)[] = [];
const BOUND_MS = 1000;
/** Numbers the API bought and then gave back because the creation could not be appended. */
const releasedNumbers: string[] = [];

beforeAll(async () => {
  system = await startSystem();
  key = await system.createPartner('Outage CRM');
  partner = partnerClient(system.app, key);
  // A broker address that accepts connections and never answers: the worst kind of outage.
  silent = net.createServer((socket) => sockets.add(socket)).listen(0, '127.0.0.1');
  await new Promise((resolve) => silent.once('listening', resolve));
});
afterAll(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => undefined);
  for (const socket of sockets) socket.destroy();
  silent?.close();
  await system?.close();
});

/** The API with a command bus whose Kafka clients point at `broker`, on the test's own database and topics. */
async function apiAgainst(broker: string): Promise<{ app: App; commands: CommandBus }> {
  const kafka = createKafka([broker], 'outage-test');
  const admin: Admin = kafka.admin();
  const listenerPool = createPool(system.env.config.DATABASE_URL, { maxConnections: 2 });
  const progress = await createProjectionProgress(listenerPool);
  const db = createDb(system.env.config.DATABASE_URL, { maxConnections: 2 });
  const commands = createCommandBus({
    ...system.services,
    db,
    kafka,
    progress,
    clock: systemClock,
    newId: newUuid,
    projectionWaitMs: 5000,
    eventLogTimeoutMs: BOUND_MS,
  });
  const app = await buildApp({
    db: system.services.db,
    commands,
    numbers: {
      provisionNumber: async () => ({ phoneNumber: '+17375550100', providerId: 'PN0' }),
      isOwnNumber: async () => true,
      releaseNumber: async ({ phoneNumber }) => void releasedNumbers.push(phoneNumber),
    },
    clock: systemClock,
    newId: newUuid,
    publicUrl: 'http://127.0.0.1:8080',
    rateLimitPerMinute: 100_000,
    webhookSecrets: createSecretBox(DEVELOPMENT_WEBHOOK_KEY),
    ...testDocuments(system.services.db),
    personalDataKeys: system.services.personalDataKeys,
    // What the command API's main checks, against the same broker as its writes.
    readinessChecks: [eventLogReadiness(admin, () => system.services.topics.account)],
  });
  cleanups.push(
    () => app.close(),
    () => commands.close(),
    () => progress.close(),
    () => listenerPool.end(),
    () => db.destroy(),
  );
  // kafkajs keeps retrying the abandoned calls for half a minute; nothing waits for it.
  cleanups.push(async () => void admin.disconnect().catch(() => undefined));
  return { app, commands };
}

describe('with the event log unreachable', () => {
  for (const [outage, broker] of [
    ['a dead port', () => '127.0.0.1:1'],
    ['a broker that never answers', () => `127.0.0.1:${(silent.address() as net.AddressInfo).port}`],
  ] as const) {
    it(`${outage}: every write answers 503 event_log_unavailable with Retry-After within the bound, holding no lock`, async () => {
      const account = (await partner.post('/accounts', { name: 'Outage Co' })).body.id as string;
      const { app } = await apiAgainst(broker());
      const down = partnerClient(app, key);
      const before = await logSize(system.services);

      const started = Date.now();
      const answers = await Promise.all([
        down.post(`/accounts/${account}/leads`, { phone: '+15125550101', name: 'Ana' }),
        down.patch(`/accounts/${account}`, { name: 'Renamed' }),
        down.post('/accounts', { name: 'Another' }),
      ]);
      const elapsed = Date.now() - started;
      for (const answer of answers) {
        expect(answer.status).toBe(503);
        expect(answer.body.code).toBe('event_log_unavailable');
        expect(answer.headers['retry-after']).toBeDefined();
      }
      // Bounded: the three ran at once; a hang would be Kafka's own retries (30 s and more).
      expect(elapsed).toBeLessThan(BOUND_MS * 5);
      expect(await logSize(system.services)).toBe(before);
      // The number bought for the account that was not created is given back.
      expect(releasedNumbers).toContain('+17375550100');

      // Reads keep working, and the account's lock is free: the healthy API writes at once.
      expect((await down.get(`/accounts/${account}`)).status).toBe(200);
      expect((await partner.patch(`/accounts/${account}`, { name: 'Renamed' })).status).toBe(200);
    });
  }
});

describe('with the event log silent, many writes queued on one account', () => {
  it('refuses each within the bound of its start, not one bound after another, and readiness answers', async () => {
    const account = (await partner.post('/accounts', { name: 'Queue Co' })).body.id as string;
    const silentBroker = `127.0.0.1:${(silent.address() as net.AddressInfo).port}`;
    const { app } = await apiAgainst(silentBroker);
    const down = partnerClient(app, key);
    const before = await logSize(system.services);

    // Sixteen renames of one account queue on its stream's lock (and on the pool's two connections):
    // each bounded on its own, one after another, the last would answer sixteen bounds later.
    const started = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 16 }, (_, n) => down.patch(`/accounts/${account}`, { name: `Queued ${n}` })),
    );
    const elapsed = Date.now() - started;
    for (const answer of answers) {
      expect(answer.status).toBe(503);
      expect(answer.body.code).toBe('event_log_unavailable');
      expect(answer.headers['retry-after']).toBeDefined();
    }
    // A few bounds at most (the machine's own delays included), where the queue took sixteen.
    expect(elapsed, `answered after ${elapsed} ms`).toBeLessThan(BOUND_MS * 8);
    expect(await logSize(system.services)).toBe(before);

    // Readiness answers "not ready" while the broker is silent, rather than hanging on its lookup.
    const asked = Date.now();
    const ready = await app.inject({ method: 'GET', url: '/health/ready' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toMatchObject({ code: 'not_ready' });
    expect(Date.now() - asked).toBeLessThan(5_000);
  });
});

describe('the broker killed under a write loop, then restarted', () => {
  // A broker of this test's own: the shared one serves every other test running now.
  let broker: PrivateKafka;
  let own: TestSystem;
  const LOOP_BOUND_MS = 1500;
  const PROJECTION_WAIT_MS = 3000;

  beforeAll(async () => {
    broker = await startPrivateKafka();
    own = await startSystem({
      brokers: broker.brokers,
      eventLogTimeoutMs: LOOP_BOUND_MS,
      projectionWaitMs: 5000,
    });
  });
  afterAll(async () => {
    await own?.close();
    await broker?.dispose();
  });

  it('answers every write 2xx or 503 with Retry-After within the bound, and loses no acknowledged write', async () => {
    const writer = partnerClient(own.app, await own.createPartner('Loop CRM'));
    // One account per writer: each write's time is its own, not a queue behind another's lock.
    const accounts: string[] = [];
    for (let i = 0; i < 4; i++)
      accounts.push((await writer.post('/accounts', { name: `Loop ${i}` })).body.id);

    interface Answer {
      account: string;
      phone: string;
      status: number;
      code?: string;
      retryAfter?: string;
      ms: number;
      phase: 'before' | 'down' | 'after';
    }
    const answers: Answer[] = [];
    let phase: Answer['phase'] = 'before';
    let running = true;
    let serial = 0;
    const loops = accounts.map(async (account) => {
      while (running) {
        const phone = `+1512555${String(++serial).padStart(4, '0')}`;
        const at = phase;
        const started = Date.now();
        const answer = await writer.post(`/accounts/${account}/leads`, { phone, name: `Lead ${serial}` });
        answers.push({
          account,
          phone,
          status: answer.status,
          code: answer.body?.code,
          retryAfter: answer.headers['retry-after'] as string | undefined,
          ms: Date.now() - started,
          phase: at,
        });
      }
    });
    const count = (predicate: (answer: Answer) => boolean) => answers.filter(predicate).length;
    const waitFor = (predicate: (answer: Answer) => boolean, atLeast: number, message: string) =>
      eventually(async () => (count(predicate) >= atLeast ? true : undefined), {
        timeoutMs: 120_000,
        message,
      });

    try {
      await waitFor((a) => a.status === 201, 20, 'writes acknowledged before the outage');
      phase = 'down';
      await broker.kill();
      await waitFor((a) => a.phase === 'down' && a.status === 503, 12, 'writes refused during the outage');
      await broker.restart();
      phase = 'after';
      await waitFor(
        (a) => a.phase === 'after' && a.status === 201,
        20,
        'writes acknowledged after the restart',
      );
    } finally {
      running = false;
      await Promise.all(loops);
    }

    // Every answer is a success or a 503 that invites a retry; the 503s came within the bound.
    const unexpected = answers.filter((a) => a.status !== 201 && a.status !== 503);
    expect(unexpected).toEqual([]);
    for (const refused of answers.filter((a) => a.status === 503)) {
      expect(['event_log_unavailable', 'projection_lagging']).toContain(refused.code);
      expect(refused.retryAfter).toBeDefined();
      // The log: at most two bounded calls to Kafka (its end, the append). The read models catching
      // up after the restart: their own bound. Each plus the database's share.
      const bound =
        refused.code === 'event_log_unavailable' ? LOOP_BOUND_MS * 2 : PROJECTION_WAIT_MS + LOOP_BOUND_MS;
      expect(refused.ms, `${refused.code} after ${refused.ms} ms`).toBeLessThan(bound + 3000);
    }
    expect(count((a) => a.phase === 'down' && a.status === 503)).toBeGreaterThanOrEqual(12);

    // Nothing acknowledged is missing: every 201 is on the log, and readable once projected.
    const acknowledged = answers.filter((a) => a.status === 201);
    const logged = new Set(
      (await accountEvents(own.services))
        .filter((event) => event.type === 'lead.created')
        .map((event) => `${event.account_id} ${(event.data as { phone: string }).phone}`),
    );
    const missing = acknowledged.filter(({ account, phone }) => !logged.has(`${account} ${phone}`));
    expect(missing).toEqual([]);
    const unreadable = async () => {
      const left: Answer[] = [];
      for (const write of acknowledged) {
        const read = await writer.get(`/accounts/${write.account}/leads/${encodeURIComponent(write.phone)}`);
        if (read.status !== 200) left.push(write);
      }
      return left;
    };
    await eventually(async () => ((await unreadable()).length === 0 ? true : undefined), {
      timeoutMs: 60_000,
      intervalMs: 500,
      message: 'acknowledged writes readable',
    }).catch(() => undefined);
    expect(await unreadable()).toEqual([]);
  });
});

describe('a read the database does not answer in time', () => {
  it('answers 503 database_busy with Retry-After, as every read documents, not a 500', async () => {
    const db = createDb(system.env.config.DATABASE_URL, {
      maxConnections: 2,
      timeouts: { statementMs: 2000, lockMs: 300 },
    });
    const app = await system.appWith({ db });
    cleanups.push(() => db.destroy());
    // Another session holds a lock every read of the accounts waits for, until the read's lock timeout.
    const holder = createDb(system.env.config.DATABASE_URL, { maxConnections: 1 });
    let release!: () => void;
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const held = holder.transaction().execute(async (trx) => {
      await sql`lock table accounts in access exclusive mode`.execute(trx);
      locked();
      await new Promise<void>((resolve) => (release = resolve));
    });
    await isLocked;
    try {
      const response = await app.inject({
        method: 'GET',
        url: '/v1/accounts',
        headers: { 'x-partner-key': key },
      });
      expect(response.statusCode).toBe(503);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(response.headers['retry-after']).toBe('1');
      expect(response.json()).toMatchObject({ status: 503, code: 'database_busy' });
    } finally {
      release();
      await held;
      await holder.destroy();
    }
    const document = (await app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
    expect(document.paths['/accounts'].get.responses['503'].description).toContain('database_busy');
  });
});
