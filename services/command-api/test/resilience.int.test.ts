import { projections, startProjector } from '@leadline/projector';
import { createDb } from '@leadline/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logSize } from '@leadline/test-kit';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

let system: TestSystem;
let partner: PartnerClient;

beforeAll(async () => {
  // No projector yet: the read models fall behind the log on purpose.
  system = await startSystem({ projector: false, projectionWaitMs: 300 });
  partner = partnerClient(system.app, await system.createPartner('Patient CRM'));
});
afterAll(() => system?.close());

describe('when the read models lag behind the log', () => {
  it('answers 503 with Retry-After and writes nothing, then works once the projector catches up', async () => {
    // The write is acknowledged by the log; the answer comes from the event, not the lagging read model.
    const created = await partner.post('/accounts', { name: 'Lagging' });
    expect(created.status).toBe(201);
    expect(created.body.name).toBe('Lagging');

    const before = await logSize(system.services);
    const refused = await partner.patch(`/accounts/${created.body.id}`, { name: 'Renamed' });
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.body).toMatchObject({ status: 503, code: 'projection_lagging' });
    expect(await logSize(system.services)).toBe(before);

    const db = createDb(system.env.config.DATABASE_URL, { maxConnections: 2 });
    const projector = await startProjector({
      ...system.services,
      db,
      groupId: system.projectorGroupId,
      projections,
    });
    try {
      const renamed = await partner.patch(`/accounts/${created.body.id}`, { name: 'Renamed' });
      expect(renamed.status).toBe(200);
      expect(renamed.body).toMatchObject({ id: created.body.id, name: 'Renamed', slug: 'lagging' });
    } finally {
      await projector.stop();
      await db.destroy();
    }
  });
});

describe('operations', () => {
  it('limits each partner key to its requests a minute, with a 429 problem and Retry-After', async () => {
    const app = await system.appWith({ rateLimitPerMinute: 3 });
    const limited = partnerClient(app, await system.createPartner('Busy CRM'));
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await limited.get('/accounts'));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 429]);
    // The documented policy, on every answer.
    expect(answers[0]!.headers).toMatchObject({ 'x-ratelimit-limit': '3', 'x-ratelimit-remaining': '2' });
    expect(Number(answers[0]!.headers['x-ratelimit-reset'])).toBeGreaterThan(0);
    const refused = await limited.get('/accounts');
    expect(refused.body).toMatchObject({ status: 429, code: 'rate_limited' });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // Another partner's key has its own budget.
    expect((await partner.get('/accounts')).status).toBe(200);
  });

  it('says only "not ready" to an anonymous caller, never why', async () => {
    const app = await system.appWith({
      readinessChecks: [
        async () => {
          throw new Error('connect ECONNREFUSED 10.20.0.7:9092 (kafka-0.internal)');
        },
      ],
    });
    const response = await app.inject({ method: 'GET', url: '/health/ready' });
    expect(response.statusCode).toBe(503);
    expect(response.json()).toMatchObject({ code: 'not_ready', detail: 'Not ready.' });
    expect(response.body).not.toMatch(/10\.20|internal|ECONNREFUSED|9092/);
  });

  it('answers liveness and readiness without a key', async () => {
    expect((await system.app.inject({ method: 'GET', url: '/health/live' })).json()).toEqual({
      status: 'ok',
    });
    expect((await system.app.inject({ method: 'GET', url: '/health/ready' })).json()).toEqual({
      status: 'ready',
      parked_records: {},
    });
  });
});
