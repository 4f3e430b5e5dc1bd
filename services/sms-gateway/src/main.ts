import {
  connectWorkerServices,
  guardUnsafeSettings,
  loadConfig,
  systemClock,
  serveServiceMetrics,
} from '@leadline/runtime';
import {
  createLocalSmsSender,
  createTwilioProvider,
  registrationEnforced,
  registrationEnforcementRisks,
  twilioCredentials,
  twilioRisks,
} from '@leadline/telephony';
import { gatewayConfigSchema, sendingGraceMs } from './config';
import { startSmsGateway } from './gateway';

const config = loadConfig(gatewayConfigSchema);
guardUnsafeSettings('sms-gateway', config.NODE_ENV, [
  ...twilioRisks(config),
  ...registrationEnforcementRisks(config),
]);
// Each worker holds at most one connection of each pool at a time (its decision's transaction on the
// command pool, its outbox updates on the outbox pool), so a pool smaller than the workers queues
// them rather than deadlocking; the consumer, the parking release and reconcile share the outbox pool.
const services = await connectWorkerServices(config, 'sms-gateway', 6);
const outboxDb = services.db;
// Twilio whenever its credentials are configured; the local sender (marks everything delivered) otherwise.
const twilio = twilioCredentials(config);
const gateway = await startSmsGateway({
  ...services,
  db: outboxDb,
  sender: twilio ? createTwilioProvider(twilio) : createLocalSmsSender(),
  clock: systemClock,
  groupId: `${config.TOPIC_PREFIX}leadline.sms-gateway`,
  concurrency: config.SMS_GATEWAY_CONCURRENCY,
  sendingTimeoutMs: config.SMS_SENDING_TIMEOUT_MINUTES * 60_000,
  maxQueueAgeMs: config.SMS_MAX_QUEUE_AGE_MINUTES * 60_000,
  sendTimeoutMs: config.SMS_SEND_TIMEOUT_SECONDS * 1000,
  sendingGraceMs: sendingGraceMs(config),
  registrationEnforced: registrationEnforced(config),
  pacing: {
    messagesPerSecond: config.SMS_MESSAGES_PER_SECOND,
    brandDailyCap: config.SMS_BRAND_DAILY_CAP ?? null,
  },
});
console.warn(`sms-gateway: running with the ${twilio ? 'Twilio' : 'local'} provider`);
const metrics = await serveServiceMetrics(config, outboxDb);

const shutdown = async () => {
  await metrics?.close();
  await gateway.stop();
  await services.close();
  process.exit(0);
};
process.once('SIGTERM', () => void shutdown());
process.once('SIGINT', () => void shutdown());
