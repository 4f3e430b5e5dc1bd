import {
  connectWorkerServices,
  loadConfig,
  newUuid,
  systemClock,
  serveServiceMetrics,
} from '@leadline/runtime';
import { sequencerConfigSchema } from './config';
import { startSequencer } from './sequencer';

const config = loadConfig(sequencerConfigSchema);
const services = await connectWorkerServices(config, 'sequencer', 5);
const claimsDb = services.db;
const sequencer = await startSequencer({
  ...services,
  db: claimsDb,
  clock: systemClock,
  newId: newUuid,
  groupId: `${config.TOPIC_PREFIX}leadline.sequencer`,
  hourSeconds: config.SEQUENCE_HOUR_SECONDS,
  pollIntervalMs: config.SEQUENCER_POLL_MS,
});
console.warn(`sequencer: running (one delay hour = ${config.SEQUENCE_HOUR_SECONDS} s)`);
const metrics = await serveServiceMetrics(config, claimsDb);

const shutdown = async () => {
  await metrics?.close();
  await sequencer.stop();
  await services.close();
  process.exit(0);
};
process.once('SIGTERM', () => void shutdown());
process.once('SIGINT', () => void shutdown());
