import {
  connectInfrastructure,
  createCommandBus,
  createDocumentLinks,
  documentLinkKeyRisks,
  createPool,
  databaseTimeouts,
  splitConnectionBudget,
  createProjectionProgress,
  listenToChannel,
  createSecretBox,
  exitWhenConsumerGivesUp,
  guardUnsafeSettings,
  loadConfig,
  newUuid,
  systemClock,
  webhookKeyRisks,
  serveServiceMetrics,
} from '@leadline/runtime';
import { relayConfigSchema } from './config';
import { createDispatcher, DELIVERIES_CHANNEL } from './dispatcher';
import { createWebhookClient } from './http-client';
import { startRelay } from './relay';

const config = loadConfig(relayConfigSchema);
guardUnsafeSettings('webhook-relay', config.NODE_ENV, [
  ...webhookKeyRisks(config.WEBHOOK_ENCRYPTION_KEYS),
  ...documentLinkKeyRisks(config.DOCUMENT_LINK_KEYS),
  ...(config.WEBHOOK_ALLOW_PRIVATE_TARGETS
    ? [
        {
          setting: 'WEBHOOK_ALLOW_PRIVATE_TARGETS',
          risk: 'is true: partners can make the relay post to loopback and private-network addresses',
        },
      ]
    : []),
]);
// Two listening connections (projection progress, queued deliveries) and one for the progress's own
// reads (catching up after a reconnect, polling while a command waits): with two, those reads waited
// for a connection that never came free. No connection is held while a partner's endpoint answers:
// the dispatcher's claims, records and outbox appends are short statements, the consumer's batches
// need one per partition at most; they share the rest.
const connections = splitConnectionBudget('webhook-relay', config.DATABASE_MAX_CONNECTIONS ?? 5, {
  listening: { fixed: 3 },
  relay: { share: 1 },
});
const infrastructure = await connectInfrastructure(config, 'leadline-webhook-relay', {
  maxConnections: connections.relay,
});
const listenerPool = createPool(config.DATABASE_URL, {
  maxConnections: connections.listening,
  timeouts: databaseTimeouts(config),
});
const progress = await createProjectionProgress(listenerPool);
const commands = createCommandBus({
  ...infrastructure,
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
  endpointConcurrency: config.WEBHOOK_ENDPOINT_CONCURRENCY,
  leaseMs: config.WEBHOOK_LEASE_MS,
  attemptTimeoutMs: config.WEBHOOK_TIMEOUT_MS,
  backfillWindowMs: config.WEBHOOK_BACKFILL_WINDOW_HOURS * 3600_000,
  commands,
});
// Any relay's fan-out (and a retry requested through the API) wakes every relay at once; so does
// listening again after a lost connection, for what was queued meanwhile.
const deliveries = await listenToChannel(listenerPool, DELIVERIES_CHANNEL, {
  onNotification: () => dispatcher.wake(),
  onReconnect: () => dispatcher.wake(),
});
// A webhook just projected may need the events fanned out before it was visible.
const unsubscribe = progress.subscribe((batch) => {
  if (batch.some((entry) => entry.topic === infrastructure.topics.partner)) dispatcher.webhooksChanged();
});
const relay = await startRelay({
  ...infrastructure,
  groupId: `${config.TOPIC_PREFIX}leadline.webhook-relay`,
  clock: systemClock,
  newId: newUuid,
  documentLinks: createDocumentLinks({
    publicUrl: config.PUBLIC_URL,
    keys: config.DOCUMENT_LINK_KEYS,
    clock: systemClock,
  }),
  onDeliveriesQueued: () => dispatcher.wake(),
  onCrash: exitWhenConsumerGivesUp('webhook-relay'),
});
dispatcher.start();
console.warn('webhook-relay: running');
const metrics = await serveServiceMetrics(config, infrastructure.db);

const shutdown = async () => {
  await metrics?.close();
  await relay.stop();
  unsubscribe();
  deliveries.close();
  await dispatcher.stop();
  client.close();
  await progress.close();
  await listenerPool.end();
  await commands.close();
  await infrastructure.close();
  process.exit(0);
};
process.once('SIGTERM', () => void shutdown());
process.once('SIGINT', () => void shutdown());
