import { createDb } from '@leadline/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../src/app';
import { partnerClient } from './client';
import { startSystem, type TestSystem } from './system';

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
