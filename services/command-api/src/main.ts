import { createSecretBox, loadConfig, newUuid, systemClock } from '@leadline/runtime';
import { buildApp } from './app';
import { apiConfigSchema } from './config';
import { ensurePartnerWithKey } from './partners/partners';
import { connectCommandServices } from './services';
import { createLocalNumberPool } from './telephony/local-number-pool';

const config = loadConfig(apiConfigSchema);
const services = await connectCommandServices(config, 'leadline-command-api');
if (config.PARTNER_API_KEY) {
  await ensurePartnerWithKey(
    { db: services.db, commands: services.commands, newId: newUuid },
    'Local development partner',
    config.PARTNER_API_KEY,
  );
}

const numbers = createLocalNumberPool(config.DATABASE_URL);
const app = await buildApp({
  db: services.db,
  commands: services.commands,
  numbers,
  clock: systemClock,
  newId: newUuid,
  publicUrl: config.PUBLIC_URL,
  rateLimitPerMinute: config.RATE_LIMIT_PER_MINUTE,
  webhookSecrets: createSecretBox(config.WEBHOOK_ENCRYPTION_KEY),
  readinessChecks: [async () => void (await services.admin.fetchTopicOffsets(services.topics.account))],
  logger: { level: process.env.LOG_LEVEL ?? 'info' },
});
await app.listen({ port: config.PORT, host: config.HOST });

const shutdown = async () => {
  await app.close();
  await numbers.close();
  await services.close();
  process.exit(0);
};
process.once('SIGTERM', () => void shutdown());
process.once('SIGINT', () => void shutdown());
