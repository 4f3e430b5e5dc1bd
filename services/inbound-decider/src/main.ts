import {
  connectWorkerServices,
  exitWhenConsumerGivesUp,
  loadConfig,
  newUuid,
  systemClock,
} from '@leadline/runtime';
import { inboundDeciderConfigSchema } from './config';
import { startInboundDecider } from './decider';

// The inbound decider: its own process, so the webhook that keeps inbound SMS never waits for it.
const config = loadConfig(inboundDeciderConfigSchema);
const concurrency = config.INBOUND_DECIDER_CONCURRENCY;
// Decisions are commands (half the rest, the first to get what rounding leaves); checkpoints and the
// MessageSid marks are short statements on the decider's own pool. Neither holds one of its pool's
// connections while waiting for another, so a small pool queues work rather than deadlocking.
const services = await connectWorkerServices(config, 'inbound-decider', 6);
const deciderDb = services.db;
const decider = await startInboundDecider({
  ...services,
  db: deciderDb,
  clock: systemClock,
  newId: newUuid,
  groupId: `${config.TOPIC_PREFIX}leadline.inbound-decider`,
  concurrency,
  onCrash: exitWhenConsumerGivesUp('inbound-decider'),
});

const shutdown = async () => {
  await decider.stop();
  await services.close();
  process.exit(0);
};
process.once('SIGTERM', () => void shutdown());
process.once('SIGINT', () => void shutdown());
