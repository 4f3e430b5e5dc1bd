import {
  createDocumentLinks,
  createDocumentStore,
  createPool,
  createSecretBox,
  documentLinkKeyRisks,
  guardUnsafeSettings,
  loadConfig,
  newUuid,
  splitConnectionBudget,
  systemClock,
  webhookKeyRisks,
} from '@leadline/runtime';
import { startOrphanNumberSweep } from './accounts/orphan-numbers';
import { startRetentionSchedule } from './retention/pass';
import { buildApp } from './app';
import { eventLogReadiness } from './http/readiness';
import { apiConfigSchema } from './config';
import { ensurePartnerWithKey } from './partners/partners';
import { connectCommandServices } from './services';
import {
  createLocalNumberPool,
  createTwilioProvider,
  twilioCredentials,
  twilioRisks,
} from '@leadline/telephony';

const config = loadConfig(apiConfigSchema);
guardUnsafeSettings('command-api', config.NODE_ENV, [
  ...twilioRisks(config),
  ...webhookKeyRisks(config.WEBHOOK_ENCRYPTION_KEYS),
  ...documentLinkKeyRisks(config.DOCUMENT_LINK_KEYS),
]);
// Twilio whenever its credentials are configured; the local number pool (one connection) otherwise.
const twilio = twilioCredentials(config);
// Commands hold a connection from their stream's lock to their append, so they get their own pool,
// the first to get what rounding leaves; reads (and authentication) share the other.
const connections = splitConnectionBudget('command-api', config.DATABASE_MAX_CONNECTIONS ?? 10, {
  listening: { fixed: 2 },
  keyListening: { fixed: 1 },
  localNumbers: { fixed: twilio ? 0 : 1 },
  commands: { share: 1 },
  reads: { share: 1 },
});
const services = await connectCommandServices(config, 'leadline-command-api', {
  listeningConnections: connections.listening,
  commandConnections: connections.commands,
  readConnections: connections.reads,
});
if (config.PARTNER_API_KEY) {
  await ensurePartnerWithKey(
    { db: services.db, commands: services.commands, newId: newUuid },
    'Local development partner',
    config.PARTNER_API_KEY,
  );
}

const localPool = twilio ? undefined : createLocalNumberPool(config.DATABASE_URL);
const numbers = twilio ? createTwilioProvider(twilio) : localPool!;
// One connection listening for partner key revocations (the key cache's).
const keyListenerPool = createPool(config.DATABASE_URL, { maxConnections: connections.keyListening });
const app = await buildApp({
  db: services.db,
  commands: services.commands,
  numbers,
  clock: systemClock,
  newId: newUuid,
  publicUrl: config.PUBLIC_URL,
  appUrl: config.APP_URL,
  progress: services.progress,
  twilioAuthToken: config.TWILIO_AUTH_TOKEN,
  rateLimitPerMinute: config.RATE_LIMIT_PER_MINUTE,
  partnerKeyCache: { pool: keyListenerPool },
  authFailuresPerMinute: config.AUTH_FAILURES_PER_MINUTE,
  webhookSecrets: createSecretBox(config.WEBHOOK_ENCRYPTION_KEYS),
  sequenceHourSeconds: config.SEQUENCE_HOUR_SECONDS,
  documentLinks: createDocumentLinks({
    publicUrl: config.PUBLIC_URL,
    keys: config.DOCUMENT_LINK_KEYS,
    clock: systemClock,
    ttlSeconds: 3600,
  }),
  documents: createDocumentStore(config, services.db, services.personalDataKeys),
  personalDataKeys: services.personalDataKeys,
  allowPrivateTargets: config.ALLOW_PRIVATE_TARGETS,
  readinessChecks: [eventLogReadiness(services.admin, () => services.topics.account)],
  logger: { level: process.env.LOG_LEVEL ?? 'info' },
});
await app.listen({ port: config.PORT, host: config.HOST });
// Numbers bought for accounts whose creation never completed go back to the provider.
const orphanSweep = startOrphanNumberSweep({
  db: services.db,
  numbers,
  clock: systemClock,
  onReleased: (orphans) => {
    for (const orphan of orphans)
      app.log.warn(
        { phone_number: orphan.phoneNumber, account_id: orphan.accountId },
        'released a number bought for an account that was never created',
      );
  },
  onError: (error) => app.log.error({ err: error }, 'the sweep for orphaned numbers failed'),
});

// Content past an account's retention_days expires (see retention/pass.ts).
const retention = startRetentionSchedule({
  db: services.db,
  commands: services.commands,
  clock: systemClock,
  personalDataKeys: services.personalDataKeys,
  onExpired: (expired) => {
    for (const account of expired)
      app.log.info(
        { account_id: account.accountId, expired_before: account.expiredBefore, keys: account.keysDestroyed },
        "expired the account's content past its retention",
      );
  },
  onError: (error) => app.log.error({ err: error }, 'the retention pass failed'),
});

const shutdown = async () => {
  orphanSweep.stop();
  await retention.stop();
  await app.close();
  await keyListenerPool.end();
  await localPool?.close();
  await services.close();
  process.exit(0);
};
process.once('SIGTERM', () => void shutdown());
process.once('SIGINT', () => void shutdown());
