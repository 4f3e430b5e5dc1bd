import { createDb, createPool, type Database } from '@leadline/runtime';
import { Kysely, PostgresDialect } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../src/app';
import { MAX_LEASE_SHARE } from '../src/http/rate-limit-store';
import { partnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

const LIMIT = 5;
let system: TestSystem;
const instances: { app: App; db: ReturnType<typeof createDb> }[] = [];

beforeAll(async () => {
  system = await startSystem();
  // Two command API instances, each with its own connections, as two processes behind a balancer.
  for (let i = 0; i < 2; i++) {
    const db = createDb(system.env.config.DATABASE_URL, { maxConnections: 4 });
    const app = await system.appWith({ db, rateLimitPerMinute: LIMIT });
    instances.push({ app, db });
  }
});
afterAll(async () => {
  await system?.close();
  for (const { db } of instances) await db.destroy();
});

describe('rate limits across instances', () => {
  it('allow a partner its documented requests a minute in total, not per instance', async () => {
    const key = await system.createPartner('Spread CRM');
    const clients = instances.map(({ app }) => partnerClient(app, key));
    const statuses: number[] = [];
    for (let i = 0; i < 2 * LIMIT; i++) statuses.push((await clients[i % 2]!.get('/accounts')).status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(LIMIT);
    expect(statuses.slice(LIMIT)).toEqual(Array(LIMIT).fill(429));
    const refused = await clients[1]!.get('/accounts');
    expect(refused.body).toMatchObject({ code: 'rate_limited' });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);

    // Another partner has its own budget on either instance.
    const other = await system.createPartner('Quiet CRM');
    expect((await partnerClient(instances[1]!.app, other).get('/accounts')).status).toBe(200);
  });

  it('allow an embed token its documented requests a minute in total, not per instance', async () => {
    // Made through the unlimited app: only the embed token's own requests count below.
    const partner = partnerClient(system.app, await system.createPartner('Embedding CRM'));
    const account = (await partner.post('/accounts', { name: 'Sunrise Mortgage' })).body.id as string;
    const tokenOf = async () =>
      (await partner.post(`/accounts/${account}/embed-token`, {})).body.token as string;
    const [busy, calm] = [await tokenOf(), await tokenOf()];
    const session = (app: App, token: string) =>
      app.inject({ method: 'GET', url: '/embed/api/session', headers: { authorization: `Bearer ${token}` } });
    const statuses: number[] = [];
    for (let i = 0; i < 2 * LIMIT; i++)
      statuses.push((await session(instances[i % 2]!.app, busy)).statusCode);
    expect(statuses.filter((status) => status === 200)).toHaveLength(LIMIT);
    expect(statuses.slice(LIMIT)).toEqual(Array(LIMIT).fill(429));
    expect((await session(instances[1]!.app, busy)).json()).toMatchObject({ code: 'rate_limited' });

    // Another token of the same account has its own budget on either instance.
    expect((await session(instances[1]!.app, calm)).statusCode).toBe(200);
  });
});

describe('a busy partner across instances', () => {
  it('is allowed no more than its limit in total, refused early by at most the tokens each instance leased, and costs far fewer writes than requests', async () => {
    const limit = 1000;
    const counterWrites: number[] = [];
    const busy: App[] = [];
    for (let i = 0; i < 2; i++) {
      const db = new Kysely<Database>({
        dialect: new PostgresDialect({
          pool: createPool(system.env.config.DATABASE_URL, { maxConnections: 4 }),
        }),
        log: (event) => {
          if (event.query.sql.includes('rate_limit_counters')) counterWrites[i] = (counterWrites[i] ?? 0) + 1;
        },
      });
      instances.push({ app: await system.appWith({ db, rateLimitPerMinute: limit }), db });
      busy.push(instances.at(-1)!.app);
    }
    const key = await system.createPartner('Busy CRM');
    const clients = busy.map((app) => partnerClient(app, key));
    const requests = limit + 100;
    const statuses: number[] = [];
    // Eight at a time, spread over both instances.
    for (let i = 0; i < requests; i += 8)
      statuses.push(
        ...(await Promise.all(
          Array.from({ length: 8 }, async (_, j) => (await clients[(i + j) % 2]!.get('/accounts')).status),
        )),
      );
    const allowed = statuses.filter((status) => status === 200).length;
    expect(statuses.filter((status) => status !== 200 && status !== 429)).toEqual([]);
    expect(allowed).toBeLessThanOrEqual(limit);
    expect(allowed).toBeGreaterThanOrEqual(limit - 2 * limit * MAX_LEASE_SHARE);
    const writes = counterWrites.reduce((sum, count) => sum + count, 0);
    expect(writes).toBeLessThan(requests / 3);
  });
});
