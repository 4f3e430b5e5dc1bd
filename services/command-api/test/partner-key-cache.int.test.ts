import { createPool, type Database } from '@leadline/runtime';
import { eventually } from '@leadline/test-kit';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../src/app';
import { hashApiKey } from '../src/partners/api-keys';
import { listPartnerKeys, revokePartnerKey } from '../src/partners/keys';
import { partnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

let system: TestSystem;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  system = await startSystem();
});
afterAll(async () => {
  await system?.close();
  for (const close of closers) await close();
});

/** Another command API instance, with its own connections; `statements` holds every SQL it ran. */
async function instance(options: { listenerName?: string; onListenerError?: (error: Error) => void } = {}) {
  const statements: string[] = [];
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: createPool(system.env.config.DATABASE_URL, { maxConnections: 4 }) }),
    log: (event) => void statements.push(event.query.sql),
  });
  const url = new URL(system.env.config.DATABASE_URL);
  if (options.listenerName) url.searchParams.set('application_name', options.listenerName);
  const listenerPool = createPool(url.toString(), { maxConnections: 1 });
  const app = await system.appWith({
    db,
    partnerKeyCache: {
      pool: listenerPool,
      // Once lost, the listener stays lost for the length of the test.
      reconnectBackoff: { minMs: 600_000, maxMs: 600_000 },
      ...(options.onListenerError && { onListenerError: options.onListenerError }),
    },
  });
  // The app is closed with the system, before these.
  closers.push(async () => {
    await listenerPool.end();
    await db.destroy();
  });
  const keyLookups = () => statements.filter((statement) => statement.includes('"partner_api_keys"')).length;
  return { app, keyLookups };
}

const status = async (app: App, key: string) => (await partnerClient(app, key).get('/accounts')).status;

async function revoke(key: string) {
  const { partner_id: partnerId } = await system.services.db
    .selectFrom('partner_api_keys')
    .select('partner_id')
    .where('key_hash', '=', hashApiKey(key))
    .executeTakeFirstOrThrow();
  const [view] = await listPartnerKeys(system.services.db, partnerId);
  await revokePartnerKey(system.services.db, partnerId, view!.prefix, new Date());
}

describe('the partner key cache', () => {
  it('answers a known key from memory: requests after the first look nothing up', async () => {
    const { app, keyLookups } = await instance();
    const key = await system.createPartner('Cached CRM');
    expect(await status(app, key)).toBe(200);
    const before = keyLookups();
    for (let i = 0; i < 40; i++) expect(await status(app, key)).toBe(200);
    // Not a strict zero: the cache is bypassed for a moment if its heartbeat is late on a busy machine.
    expect(keyLookups() - before).toBeLessThan(10);
  });

  it('forgets a key revoked on another instance as soon as the revocation is announced', async () => {
    const { app: second } = await instance();
    const key = await system.createPartner('Revoking CRM');
    expect(await status(system.app, key)).toBe(200);
    expect(await status(second, key)).toBe(200);
    await revoke(key);
    // Waits for the announcement: without one the cached key would be accepted for ever.
    await eventually(async () => ((await status(second, key)) === 401 ? true : undefined), {
      message: 'the revoked key is still accepted by the second instance',
    });
    expect(await status(system.app, key)).toBe(401);
  });

  it('is not trusted while its listening connection is lost: a revocation it cannot hear is seen at once', async () => {
    let lost!: () => void;
    const listenerLost = new Promise<void>((resolve) => (lost = resolve));
    const name = `key-cache-${Date.now()}`;
    const { app } = await instance({ listenerName: name, onListenerError: () => lost() });
    const key = await system.createPartner('Partitioned CRM');
    expect(await status(app, key)).toBe(200);
    expect(await status(app, key)).toBe(200);

    const { rows } = await sql<{ terminated: boolean }>`
      select pg_terminate_backend(pid) as terminated from pg_stat_activity
      where application_name = ${name} and datname = current_database()`.execute(system.services.db);
    expect(rows).toEqual([{ terminated: true }]);
    await listenerLost;
    // Nobody listens for this instance now (it retries in minutes): the revocation's announcement
    // never reaches it, and its cache must not answer for the key.
    await revoke(key);
    expect(await status(app, key)).toBe(401);
  });
});
