import { projections, startProjector } from '@leadline/projector';
import {
  createDb,
  createDocumentLinks,
  createPostgresDocumentStore,
  createSecretBox,
  documentLinkKey,
  DEVELOPMENT_WEBHOOK_KEY,
  newUuid,
  systemClock,
} from '@leadline/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app';
import { partnerClient, type PartnerClient } from './client';
import { logSize } from './log';
import { startSystem, type TestSystem } from './system';

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
    const app = await buildApp({
      db: system.services.db,
      commands: system.services.commands,
      numbers: { provisionNumber: async () => '+15550000000' },
      clock: systemClock,
      newId: newUuid,
      publicUrl: 'http://127.0.0.1:8080',
      rateLimitPerMinute: 3,
      webhookSecrets: createSecretBox(DEVELOPMENT_WEBHOOK_KEY),
      documentLinks: createDocumentLinks({
        publicUrl: 'http://127.0.0.1:8080',
        key: documentLinkKey(DEVELOPMENT_WEBHOOK_KEY),
        clock: systemClock,
      }),
      documents: createPostgresDocumentStore(system.services.db),
    });
    try {
      const limited = partnerClient(app, await system.createPartner('Busy CRM'));
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await limited.get('/accounts')).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
      const refused = await limited.get('/accounts');
      expect(refused.body).toMatchObject({ status: 429, code: 'rate_limited' });
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      // Another partner's key has its own budget.
      expect((await partner.get('/accounts')).status).toBe(200);
    } finally {
      await app.close();
    }
  });

  it('answers liveness and readiness without a key', async () => {
    expect((await system.app.inject({ method: 'GET', url: '/health/live' })).json()).toEqual({
      status: 'ok',
    });
    expect((await system.app.inject({ method: 'GET', url: '/health/ready' })).json()).toEqual({
      status: 'ready',
    });
  });
});
