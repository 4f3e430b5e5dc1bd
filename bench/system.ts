import { projections, startProjector } from '@leadline/projector';
import {
  createDb,
  createDocumentLinks,
  createPool,
  createPostgresDocumentStore,
  createSecretBox,
  DEVELOPMENT_DOCUMENT_LINK_KEY,
  DEVELOPMENT_WEBHOOK_KEY,
  newUuid,
  systemClock,
} from '@leadline/runtime';
import { createLocalNumberPool } from '@leadline/telephony';
import { buildApp } from '../services/command-api/src/app';
import { generateApiKey } from '../services/command-api/src/partners/api-keys';
import { createPartner } from '../services/command-api/src/partners/partners';
import { connectCommandServices } from '../services/command-api/src/services';
import { startInboundDecider } from '../services/inbound-decider/src/decider';
import { benchEnvironment } from './environment';

/**
 * The API listening on a loopback port and the projector, on a throwaway database and topic prefix,
 * with one partner; requests go over real HTTP.
 */
export async function startBenchSystem() {
  const env = await benchEnvironment();
  const services = await connectCommandServices(
    { ...env.config, PROJECTION_WAIT_MS: 30_000 },
    'leadline-bench',
  );
  const projectorConcurrency = Number(process.env.PROJECTOR_CONCURRENCY ?? 4);
  const projectorDb = createDb(env.config.DATABASE_URL, { maxConnections: projectorConcurrency + 2 });
  const numbers = createLocalNumberPool(env.config.DATABASE_URL);
  const projector = await startProjector({
    ...services,
    db: projectorDb,
    groupId: `${env.config.TOPIC_PREFIX}leadline.projector`,
    projections,
    concurrency: projectorConcurrency,
  });
  // Inbound SMS are answered once kept; the decider makes them messages. It is its own process in
  // production, with its own producer and command connections: here too.
  const deciderServices = await connectCommandServices(
    { ...env.config, PROJECTION_WAIT_MS: 30_000 },
    'leadline-bench-inbound-decider',
  );
  const deciderDb = createDb(env.config.DATABASE_URL, { maxConnections: 4 });
  const decider = await startInboundDecider({
    ...deciderServices,
    db: deciderDb,
    clock: systemClock,
    newId: newUuid,
    groupId: `${env.config.TOPIC_PREFIX}leadline.inbound-decider`,
  });
  const keyListenerPool = createPool(env.config.DATABASE_URL, { maxConnections: 1 });
  const app = await buildApp({
    db: services.db,
    commands: services.commands,
    numbers,
    clock: systemClock,
    newId: newUuid,
    publicUrl: 'http://127.0.0.1',
    progress: services.progress,
    rateLimitPerMinute: 10_000_000,
    partnerKeyCache: { pool: keyListenerPool },
    webhookSecrets: createSecretBox(DEVELOPMENT_WEBHOOK_KEY),
    documentLinks: createDocumentLinks({
      publicUrl: 'http://127.0.0.1',
      keys: [DEVELOPMENT_DOCUMENT_LINK_KEY],
      clock: systemClock,
    }),
    documents: createPostgresDocumentStore(services.db, services.personalDataKeys),
    personalDataKeys: services.personalDataKeys,
  });
  const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  const key = generateApiKey();
  await createPartner({ ...services, newId: newUuid }, 'Bench partner', key);
  return {
    env,
    services,
    baseUrl,
    headers: { 'x-partner-key': key, 'content-type': 'application/json' },
    async close() {
      await app.close();
      await keyListenerPool.end();
      await decider.stop();
      await deciderDb.destroy();
      await deciderServices.close();
      await projector.stop();
      await projectorDb.destroy();
      await numbers.close();
      await services.close();
      await env.dispose();
    },
  };
}

export type BenchSystem = Awaited<ReturnType<typeof startBenchSystem>>;

/**
 * Request headers of `count` partners: the bench's own, then partners registered for the purpose, so
 * clients that each stand for a partner backend do not share one partner's key.
 */
export async function partnerHeaders({ services, headers }: BenchSystem, count: number) {
  const all = [headers];
  for (let i = 1; i < count; i++) {
    const key = generateApiKey();
    await createPartner({ ...services, newId: newUuid }, `Bench partner ${i}`, key);
    all.push({ ...headers, 'x-partner-key': key });
  }
  return all;
}

/** A request that must answer `status`; anything else aborts the bench with the answer. */
export async function expectStatus(response: Response, status: number): Promise<unknown> {
  const body = await response.json();
  if (response.status !== status)
    throw new Error(`expected ${status}, got ${response.status}: ${JSON.stringify(body)}`);
  return body;
}

/**
 * An `account.created` event as the command API appends it: what the raw floors send, so their
 * records weigh what a creation's does.
 */
export const accountCreatedEvent = (accountId: string) => ({
  id: newUuid(),
  type: 'account.created' as const,
  version: 1,
  account_id: accountId,
  partner_id: 'bench',
  occurred_at: new Date().toISOString(),
  actor: { kind: 'system' as const, service: 'bench' },
  correlation_id: 'bench',
  causation_id: null,
  data: {
    name: 'Bench',
    company_name: 'Bench',
    slug: 'bench',
    phone_number: '+15550000000',
    phone_number_provisioned: true,
    forwarding_number: null,
    branding: { logo_url: null, accent_color: null },
    metadata: {},
  },
});
