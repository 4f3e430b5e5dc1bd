import {
  connectCommandServices,
  createSecretBox,
  splitConnectionBudget,
  guardUnsafeSettings,
  loadConfig,
  serveServiceMetrics,
  systemClock,
  webhookKeyRisks,
} from '@leadline/runtime';
import {
  createLocalCarrierRegistration,
  createTwilioCarrierRegistration,
  twilioCredentials,
} from '@leadline/telephony';
import { registrationConfigSchema } from './config';
import { startRegistrationWorker } from './worker';

const config = loadConfig(registrationConfigSchema);
guardUnsafeSettings('carrier-registration', config.NODE_ENV, webhookKeyRisks(config.WEBHOOK_ENCRYPTION_KEYS));
// Twilio's ISV onboarding whenever Twilio is configured; the local simulation otherwise.
const twilio = twilioCredentials(config);
const connections = splitConnectionBudget('carrier-registration', config.DATABASE_MAX_CONNECTIONS ?? 5, {
  listening: { fixed: 2 },
  localRegistration: { fixed: twilio ? 0 : 1 },
  commands: { share: 1 },
  worker: { share: 1 },
});
const services = await connectCommandServices(config, 'leadline-carrier-registration', {
  listeningConnections: connections.listening,
  commandConnections: connections.commands,
  readConnections: connections.worker,
});
const workerDb = services.db;
const local = twilio
  ? undefined
  : createLocalCarrierRegistration({
      databaseUrl: config.DATABASE_URL,
      clock: systemClock,
      decisionDelayMs: config.REGISTRATION_LOCAL_DELAY_SECONDS * 1000,
    });
const carrier = twilio
  ? createTwilioCarrierRegistration({
      ...twilio,
      primaryCustomerProfileId: config.TWILIO_PRIMARY_PROFILE_SID!,
      notificationEmail: config.TWILIO_REGISTRATION_EMAIL!,
    })
  : local!;
const worker = startRegistrationWorker({
  db: workerDb,
  commands: services.commands,
  carrier,
  secrets: createSecretBox(config.WEBHOOK_ENCRYPTION_KEYS),
  clock: systemClock,
  checkSchedule: {
    minMs: config.REGISTRATION_CHECK_MIN_SECONDS * 1000,
    maxMs: config.REGISTRATION_CHECK_MAX_SECONDS * 1000,
  },
  retrySchedule: {
    baseMs: config.REGISTRATION_RETRY_BASE_SECONDS * 1000,
    maxMs: config.REGISTRATION_RETRY_MAX_SECONDS * 1000,
  },
  callTimeoutMs: config.REGISTRATION_TIMEOUT_SECONDS * 1000,
  pollIntervalMs: config.REGISTRATION_POLL_MS,
  concurrency: config.REGISTRATION_CONCURRENCY,
});
console.warn(
  `carrier-registration: registering through ${twilio ? 'Twilio' : `the local simulation (reviews take ${config.REGISTRATION_LOCAL_DELAY_SECONDS} s)`}`,
);
const metrics = await serveServiceMetrics(config, workerDb);

const shutdown = async () => {
  await metrics?.close();
  await worker.stop();
  await local?.close();
  await services.close();
  process.exit(0);
};
process.once('SIGTERM', () => void shutdown());
process.once('SIGINT', () => void shutdown());
