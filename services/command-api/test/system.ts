import { projections, startProjector, type RunningProjector } from '@leadline/projector';
import { createDb, createSecretBox, DEVELOPMENT_WEBHOOK_KEY, newUuid, systemClock } from '@leadline/runtime';
import { createTestEnvironment, type TestEnvironment } from '@leadline/test-kit';
import { buildApp, type App } from '../src/app';
import { generateApiKey } from '../src/partners/api-keys';
import { createPartner } from '../src/partners/partners';
import { connectCommandServices, type CommandServices } from '../src/services';
import { createLocalNumberPool } from '../src/telephony/local-number-pool';

export interface TestSystem {
  env: TestEnvironment;
  services: CommandServices;
  app: App;
  projector: RunningProjector | undefined;
  projectorGroupId: string;
  /** Registers a partner and returns its API key. */
  createPartner(name?: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * The command API and the projector, in process, on this test file's own database and topics of the
 * real Kafka, registry and PostgreSQL. `projector: false` leaves the projector to the test.
 */
export async function startSystem(
  options: { projector?: boolean; rateLimitPerMinute?: number } = {},
): Promise<TestSystem> {
  const env = await createTestEnvironment();
  const services = await connectCommandServices(
    { ...env.config, PROJECTION_WAIT_MS: 10_000 },
    'leadline-test',
  );
  const projectorGroupId = `${env.config.TOPIC_PREFIX}leadline.projector`;
  // The projector is its own process in production; here it gets its own connections likewise.
  const projectorDb = createDb(env.config.DATABASE_URL, { maxConnections: 4 });
  const projector =
    options.projector === false
      ? undefined
      : await startProjector({ ...services, db: projectorDb, groupId: projectorGroupId, projections });
  const numbers = createLocalNumberPool(env.config.DATABASE_URL);
  const app = await buildApp({
    db: services.db,
    commands: services.commands,
    numbers,
    clock: systemClock,
    newId: newUuid,
    publicUrl: 'http://127.0.0.1:8080',
    rateLimitPerMinute: options.rateLimitPerMinute ?? 100_000,
    webhookSecrets: createSecretBox(DEVELOPMENT_WEBHOOK_KEY),
  });
  return {
    env,
    services,
    app,
    projector,
    projectorGroupId,
    async createPartner(name = 'Test partner') {
      const key = generateApiKey();
      await createPartner({ ...services, newId: newUuid }, name, key);
      return key;
    },
    async close() {
      await app.close();
      await projector?.stop();
      await projectorDb.destroy();
      await numbers.close();
      await services.close();
      await env.dispose();
    },
  };
}
