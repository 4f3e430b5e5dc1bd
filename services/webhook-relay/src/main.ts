import {
  connectInfrastructure,
  createCommandBus,
  createDocumentLinks,
  documentLinkKey,
  createEventProducer,
  createPool,
  databaseTimeouts,
  createProjectionProgress,
  createSecretBox,
  guardUnsafeSettings,
  loadConfig,
  newUuid,
  systemClock,
  webhookKeyRisks,
  serveServiceMetrics,
} from '@leadline/runtime';
import { relayConfigSchema } from './config';
import { createDispatcher } from './dispatcher';
import { createWebhookClient } from './http-client';
import { startRelay } from './relay';

const config = loadConfig(relayConfigSchema);
guardUnsafeSettings('webhook-relay', config.NODE_ENV, [
  ...webhookKeyRisks(config.WEBHOOK_ENCRYPTION_KEYS),
  ...(config.WEBHOOK_ALLOW_PRIVATE_TARGETS
    ? [
        {
          setting: 'WEBHOOK_ALLOW_PRIVATE_TARGETS',
          risk: 'is true: partners can make the relay post to loopback and private-network addresses',
        },
      ]
    : []),
]);
// Each dispatcher worker holds a connection while its claimed deliveries are sent (at most one per
// in-flight attempt); a few more serve the consumer.
const infrastructure = await connectInfrastructure(config, 'leadline-webhook-relay', {
  maxConnections: config.WEBHOOK_CONCURRENCY + 4,
});
const producer = createEventProducer(infrastructure.kafka);
await producer.connect();
const listenerPool = createPool(config.DATABASE_URL, {
  maxConnections: 2,
  timeouts: databaseTimeouts(config),
});
const progress = await createProjectionProgress(listenerPool);
const commands = createCommandBus({
  ...infrastructure,
  producer,
  progress,
  clock: systemClock,
  newId: newUuid,
  projectionWaitMs: config.PROJECTION_WAIT_MS,
  eventLogTimeoutMs: config.EVENT_LOG_TIMEOUT_MS,
});
const client = createWebhookClient({
  timeoutMs: config.WEBHOOK_TIMEOUT_MS,
  allowPrivateTargets: config.WEBHOOK_ALLOW_PRIVATE_TARGETS,
  maxSockets: config.WEBHOOK_CONCURRENCY,
});
const dispatcher = createDispatcher({
  db: infrastructure.db,
  clock: systemClock,
  client,
  secrets: createSecretBox(config.WEBHOOK_ENCRYPTION_KEYS),
  retryDelaysSeconds: config.WEBHOOK_RETRY_DELAYS,
  concurrency: config.WEBHOOK_CONCURRENCY,
  commands,
});
const relay = await startRelay({
  ...infrastructure,
  groupId: `${config.TOPIC_PREFIX}leadline.webhook-relay`,
  clock: systemClock,
  newId: newUuid,
  documentLinks: createDocumentLinks({
    publicUrl: config.PUBLIC_URL,
    key: documentLinkKey(config.WEBHOOK_ENCRYPTION_KEYS[0]!),
    clock: systemClock,
  }),
  onDeliveriesQueued: () => dispatcher.wake(),
  onCrash: (error, willRestart) => {
    console.error('webhook-relay: consumer crashed', error);
    if (!willRestart) process.exit(1);
  },
});
dispatcher.start();
console.warn('webhook-relay: running');
const metrics = await serveServiceMetrics(config, infrastructure.db);

const shutdown = async () => {
  await metrics?.close();
  await relay.stop();
  await dispatcher.stop();
  client.close();
  await progress.close();
  await listenerPool.end();
  await producer.disconnect();
  await infrastructure.close();
  process.exit(0);
};
process.once('SIGTERM', () => void shutdown());
process.once('SIGINT', () => void shutdown());
