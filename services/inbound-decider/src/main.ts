import { connectCommandServices, createDb, loadConfig, newUuid, systemClock } from '@leadline/runtime';
import { inboundDeciderConfigSchema } from './config';
import { startInboundDecider } from './decider';

// The inbound decider: its own process, so the webhook that keeps inbound SMS never waits for it.
const config = loadConfig(inboundDeciderConfigSchema);
const services = await connectCommandServices(config, 'leadline-inbound-decider');
const concurrency = config.INBOUND_DECIDER_CONCURRENCY;
// Checkpoints of the partitions handled at once, and the MessageSid claims of the decisions in flight.
const deciderDb = createDb(config.DATABASE_URL, { maxConnections: concurrency + 2 });
const decider = await startInboundDecider({
  ...services,
  db: deciderDb,
  clock: systemClock,
  newId: newUuid,
  groupId: `${config.TOPIC_PREFIX}leadline.inbound-decider`,
  concurrency,
  onCrash: (error, willRestart) => {
    console.error('inbound-decider: the consumer crashed', error);
    // kafkajs gives up on it: stop, so `npm start` stops everything rather than run without it.
    if (!willRestart) process.exit(1);
  },
});

const shutdown = async () => {
  await decider.stop();
  await deciderDb.destroy();
  await services.close();
  process.exit(0);
};
process.once('SIGTERM', () => void shutdown());
process.once('SIGINT', () => void shutdown());
