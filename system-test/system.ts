import {
  projections,
  rebuild,
  startProjector,
  type Projection,
  type RunningProjector,
} from '@leadline/projector';
import { startSmsGateway, type RunningGateway } from '@leadline/sms-gateway';
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
  type Clock,
} from '@leadline/runtime';
import { createLocalSmsSender, createTwilioProvider, createLocalNumberPool } from '@leadline/telephony';
import {
  createTestEnvironment,
  openApiResponseValidator,
  type FakeTwilio,
  type TestEnvironment,
  watchStartup,
  eventually,
} from '@leadline/test-kit';
import type { InjectOptions } from 'fastify';
import type { RunningInboundDecider } from '@leadline/inbound-decider';
import { startTestInboundDecider } from './workers';
import { buildApp, type App } from '../services/command-api/src/app';
import type { AppDeps } from '../services/command-api/src/app-deps';
import { generateApiKey } from '../services/command-api/src/partners/api-keys';
import { createPartner } from '../services/command-api/src/partners/partners';
import { connectCommandServices, type CommandServices } from '../services/command-api/src/services';

export interface TestSystem {
  env: TestEnvironment;
  services: CommandServices;
  app: App;
  projector: RunningProjector | undefined;
  projectorGroupId: string;
  gateway: RunningGateway | undefined;
  inboundDecider: RunningInboundDecider | undefined;
  publicUrl: string;
  /**
   * Waits until the inbound SMS `messageSid`, already answered, has been decided and its decision is
   * in the read models (what a test reads next).
   */
  inboundDecided(messageSid: string, options?: { timeoutMs?: number }): Promise<void>;
  /**
   * Another command API over the same services and the same defaults, with `overrides` (a rate limit,
   * a log sink, a dashboard directory); closed with the system.
   */
  appWith(overrides: Partial<AppDeps>): Promise<App>;
  /** Registers a partner and returns its API key. */
  createPartner(name?: string): Promise<string>;
  /**
   * `npm run rebuild` on this system: every read model projected afresh from offset 0 (of the active
   * generation of the log under `groupPrefix`, the test's topic prefix by default) and swapped in.
   */
  rebuildReadModels(options?: { projections?: readonly Projection[]; groupPrefix?: string }): Promise<void>;
  close(): Promise<void>;
}

const PUBLIC_URL = 'http://127.0.0.1:8080';

export interface SystemOptions {
  projector?: boolean;
  rateLimitPerMinute?: number;
  projectionWaitMs?: number;
  clock?: Clock;
  twilio?: FakeTwilio;
  gateway?: boolean;
  /** The gateway enforces the carriers' sending rule (holds messages before the campaign's approval). */
  registrationEnforced?: boolean;
  /** Another broker than the shared one (a test-owned broker the test may stop). */
  brokers?: string[];
  /** KAFKA_REPLICATION_FACTOR: on a test-owned cluster of three, 3 (and min.insync.replicas 2). */
  replicationFactor?: number;
  eventLogTimeoutMs?: number;
  /** Lowers the most one command may append, to reach the limit with a small request. */
  appendMaxBytes?: number;
  /** False: no inbound decider (the test runs its own, or none). */
  inboundDecider?: boolean;
  /**
   * False: a POST to /twilio/sms answers as Twilio sees it, before its decision. By default the
   * test's `app.inject` waits for the decision too, as the tests written for the inline decision
   * expect.
   */
  awaitInbound?: boolean;
}

/**
 * The command API and the projector, in process, on this test file's own database and topics of the
 * real Kafka, registry and PostgreSQL. `projector: false` leaves the projector to the test. With
 * `twilio` (a fake of Twilio's REST API) numbers are bought and messages sent through the real twilio
 * client, and webhooks must be signed; `gateway` runs the SMS gateway too.
 */
export async function startSystem(options: SystemOptions = {}): Promise<TestSystem> {
  const startup = watchStartup('startSystem');
  const env = await createTestEnvironment();
  const clock = options.clock ?? systemClock;
  if (options.brokers) env.config.KAFKA_BROKERS = options.brokers;
  if (options.replicationFactor) env.config.KAFKA_REPLICATION_FACTOR = options.replicationFactor;
  startup.at('connecting the command services (database, topics, schemas)');
  const services = await connectCommandServices(
    {
      ...env.config,
      PROJECTION_WAIT_MS: options.projectionWaitMs ?? 10_000,
      EVENT_LOG_TIMEOUT_MS: options.eventLogTimeoutMs,
    },
    'leadline-test',
    { clock, ...(options.appendMaxBytes !== undefined && { appendMaxBytes: options.appendMaxBytes }) },
  );
  const projectorGroupId = `${env.config.TOPIC_PREFIX}leadline.projector`;
  // The projector is its own process in production; here it gets its own connections likewise.
  const projectorDb = createDb(env.config.DATABASE_URL, { maxConnections: 4 });
  startup.at('starting the projector');
  const projector =
    options.projector === false
      ? undefined
      : await startProjector({ ...services, db: projectorDb, groupId: projectorGroupId, projections });
  const localNumbers = createLocalNumberPool(env.config.DATABASE_URL);
  const twilio =
    options.twilio &&
    createTwilioProvider({
      accountSid: options.twilio.accountSid,
      authToken: options.twilio.authToken,
      apiBaseUrl: options.twilio.baseUrl,
      publicUrl: PUBLIC_URL,
    });
  // The key caches' listening connections: one for each app built (destroyed when it closes).
  const keyListenerPool = createPool(env.config.DATABASE_URL, { maxConnections: 8 });
  const appDeps = commandApiDeps(services, {
    clock,
    numbers: twilio ?? localNumbers,
    keyListenerPool,
    options,
  });
  startup.at('building the app');
  const app = await buildApp(appDeps);
  const otherApps: App[] = [];
  checkResponsesAgainstDocument(app);
  const workers = await startWorkers(env, services, { clock, sender: twilio, options, startup });
  const inboundDecided = waitForInboundDecision(services);
  if (options.awaitInbound !== false && workers.inboundDecider) {
    awaitInboundDecisions(app, async (messageSid) => {
      // The receipt is written before the answer: a 200 without one kept nothing (a short code's SMS).
      const kept = await services.db
        .selectFrom('inbound_receipts')
        .select('message_sid')
        .where('message_sid', '=', messageSid)
        .executeTakeFirst();
      if (kept) await inboundDecided(messageSid);
    });
  }
  startup.done();
  return {
    env,
    services,
    app,
    projector,
    projectorGroupId,
    gateway: workers.gateway,
    inboundDecider: workers.inboundDecider,
    publicUrl: PUBLIC_URL,
    inboundDecided,
    async appWith(overrides) {
      const other = await buildApp({ ...appDeps, ...overrides });
      checkResponsesAgainstDocument(other);
      otherApps.push(other);
      return other;
    },
    async rebuildReadModels(options = {}) {
      await rebuild({
        ...services,
        databaseUrl: env.config.DATABASE_URL,
        groupPrefix: options.groupPrefix ?? env.config.TOPIC_PREFIX,
        projections: options.projections ?? projections,
      });
    },
    async createPartner(name = 'Test partner') {
      const key = generateApiKey();
      await createPartner({ ...services, newId: newUuid }, name, key);
      return key;
    },
    async close() {
      for (const other of otherApps) await other.close();
      await app.close();
      await keyListenerPool.end();
      await workers.stop();
      await projector?.stop();
      await projectorDb.destroy();
      await localNumbers.close();
      await services.close();
      await env.dispose();
    },
  };
}

/** What the command API is built with in a test: the system's services, local defaults and the options. */
function commandApiDeps(
  services: CommandServices,
  parts: {
    clock: Clock;
    numbers: AppDeps['numbers'];
    keyListenerPool: ReturnType<typeof createPool>;
    options: SystemOptions;
  },
): AppDeps {
  const { clock, options } = parts;
  return {
    db: services.db,
    commands: services.commands,
    numbers: parts.numbers,
    clock,
    newId: newUuid,
    publicUrl: PUBLIC_URL,
    progress: services.progress,
    twilioAuthToken: options.twilio?.authToken,
    rateLimitPerMinute: options.rateLimitPerMinute ?? 100_000,
    partnerKeyCache: { pool: parts.keyListenerPool },
    webhookSecrets: createSecretBox(DEVELOPMENT_WEBHOOK_KEY),
    documentLinks: createDocumentLinks({
      publicUrl: PUBLIC_URL,
      keys: [DEVELOPMENT_DOCUMENT_LINK_KEY],
      clock,
      ttlSeconds: 3600,
    }),
    documents: createPostgresDocumentStore(services.db, services.personalDataKeys),
    personalDataKeys: services.personalDataKeys,
    // Context pages in tests are served from this machine.
    allowPrivateTargets: true,
  };
}

/**
 * The inbound decider (unless `inboundDecider: false`) and the SMS gateway (with `gateway`), each on
 * connections of its own as in production; `stop` stops both and closes their connections.
 */
async function startWorkers(
  env: TestEnvironment,
  services: CommandServices,
  parts: {
    clock: Clock;
    sender: ReturnType<typeof createTwilioProvider> | undefined;
    options: SystemOptions;
    startup: ReturnType<typeof watchStartup>;
  },
) {
  const { clock, options, startup } = parts;
  const deciderDb = createDb(env.config.DATABASE_URL, { maxConnections: 4 });
  startup.at('starting the inbound decider');
  const inboundDecider =
    options.inboundDecider === false
      ? undefined
      : await startTestInboundDecider({ env, services }, { db: deciderDb, clock });
  const gatewayDb = createDb(env.config.DATABASE_URL, { maxConnections: 4 });
  startup.at('starting the SMS gateway');
  const gateway = options.gateway
    ? await startSmsGateway({
        ...services,
        db: gatewayDb,
        sender: parts.sender ?? createLocalSmsSender(),
        clock,
        groupId: `${env.config.TOPIC_PREFIX}leadline.sms-gateway`,
        onError: () => undefined,
        registrationEnforced: options.registrationEnforced ?? false,
      })
    : undefined;
  return {
    inboundDecider,
    gateway,
    async stop() {
      await gateway?.stop();
      await gatewayDb.destroy();
      await inboundDecider?.stop();
      await deciderDb.destroy();
    },
  };
}

/**
 * Waits until an inbound SMS, already answered, has been decided and its decision is in the read
 * models (TestSystem.inboundDecided).
 */
function waitForInboundDecision(services: CommandServices) {
  return async (messageSid: string, waitOptions: { timeoutMs?: number } = {}) => {
    await eventually(
      async () => {
        const receipt = await services.db
          .selectFrom('inbound_receipts')
          .select('decided_at')
          .where('message_sid', '=', messageSid)
          .executeTakeFirst();
        return receipt?.decided_at ? true : undefined;
      },
      { timeoutMs: waitOptions.timeoutMs ?? 30_000, message: `inbound SMS ${messageSid} was never decided` },
    );
    // The decider does not wait for its decisions to be projected (a background service reads none of
    // its own writes): the test does, up to the end of the log as it stands now.
    const topic = services.topics.account;
    const ends = await services.admin.fetchTopicOffsets(topic);
    const projected = await Promise.all(
      ends.map((end) =>
        services.progress.waitFor(topic, end.partition, BigInt(end.high), waitOptions.timeoutMs ?? 30_000),
      ),
    );
    if (projected.includes(false))
      throw new Error(`inbound SMS ${messageSid} was decided but never projected`);
  };
}

/**
 * Inbound SMS are answered before they are decided; tests that post one and read the outcome at once
 * get an `app.inject` that also waits for the decision of every inbound SMS it answered with 200.
 */
function awaitInboundDecisions(app: App, decided: (messageSid: string) => Promise<void>) {
  const inject = app.inject.bind(app);
  app.inject = (async (options: InjectOptions | string) => {
    const response = await inject(options);
    if (typeof options === 'object' && options.url === '/twilio/sms' && response.statusCode === 200) {
      const sid = new URLSearchParams(String(options.payload ?? '')).get('MessageSid');
      if (sid) await decided(sid);
    }
    return response;
  }) as typeof app.inject;
}

/**
 * Every answer a test receives from the app is checked against the OpenAPI document the app serves,
 * so the document cannot drift from what the API does: an undocumented status, content type, missing
 * required header or a body off its schema fails the request that produced it.
 */
export function checkResponsesAgainstDocument(app: App) {
  const inject = app.inject.bind(app);
  let check: ReturnType<typeof openApiResponseValidator> | undefined;
  app.inject = (async (options: InjectOptions | string) => {
    const response = await inject(options);
    check ??= openApiResponseValidator(app.swagger(), '/v1');
    const request = typeof options === 'string' ? { method: 'GET', url: options } : options;
    const violations = check({
      method: String(request.method ?? 'GET'),
      url: String(request.url ?? request.path ?? ''),
      statusCode: response.statusCode,
      headers: response.headers,
      body: response.body,
    });
    if (violations.length > 0) {
      throw new Error(`The answer does not match the OpenAPI document:\n${violations.join('\n')}`);
    }
    return response;
  }) as typeof app.inject;
}
