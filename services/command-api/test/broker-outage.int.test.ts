import { testDocuments } from '@leadline/test-kit';
import net from 'node:net';
import {
  createCommandBus,
  createDb,
  createEventProducer,
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
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../src/app';
import { partnerClient, type PartnerClient } from './client';
import { logSize } from './log';
import { startSystem, type TestSystem } from './system';

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
  const producer = createEventProducer(kafka);
  const listenerPool = createPool(system.env.config.DATABASE_URL, { maxConnections: 2 });
  const progress = await createProjectionProgress(listenerPool);
  const db = createDb(system.env.config.DATABASE_URL, { maxConnections: 2 });
  const commands = createCommandBus({
    ...system.services,
    db,
    admin,
    producer,
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
  });
  cleanups.push(
    () => app.close(),
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
