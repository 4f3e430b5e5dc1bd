import {
  connectCommandServices,
  createDb,
  guardUnsafeSettings,
  loadConfig,
  systemClock,
  serveServiceMetrics,
} from '@leadline/runtime';
import {
  createLocalSmsSender,
  createTwilioProvider,
  twilioCredentials,
  twilioRisks,
} from '@leadline/telephony';
import { gatewayConfigSchema } from './config';
import { startSmsGateway } from './gateway';

const config = loadConfig(gatewayConfigSchema);
guardUnsafeSettings('sms-gateway', config.NODE_ENV, twilioRisks(config));
const services = await connectCommandServices(config, 'leadline-sms-gateway');
const outboxDb = createDb(config.DATABASE_URL, { maxConnections: 4 });
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
});
console.warn(`sms-gateway: running with the ${twilio ? 'Twilio' : 'local'} provider`);
const metrics = await serveServiceMetrics(config, outboxDb);

const shutdown = async () => {
  await metrics?.close();
  await gateway.stop();
  await outboxDb.destroy();
  await services.close();
  process.exit(0);
};
process.once('SIGTERM', () => void shutdown());
process.once('SIGINT', () => void shutdown());
