import {
  connectCommandServices,
  loadConfig,
  newUuid,
  systemClock,
  serveServiceMetrics,
  splitConnectionBudget,
} from '@leadline/runtime';
import { sequencerConfigSchema } from './config';
import { startSequencer } from './sequencer';

const config = loadConfig(sequencerConfigSchema);
const connections = splitConnectionBudget('sequencer', config.DATABASE_MAX_CONNECTIONS ?? 5, {
  listening: { fixed: 2 },
  commands: { share: 1 },
  claims: { share: 1 },
});
const services = await connectCommandServices(config, 'leadline-sequencer', {
  listeningConnections: connections.listening,
  commandConnections: connections.commands,
  readConnections: connections.claims,
});
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
