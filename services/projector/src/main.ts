import {
  connectInfrastructure,
  exitWhenConsumerGivesUp,
  infrastructureConfig,
  loadConfig,
  metricsConfig,
  serveServiceMetrics,
  splitConnectionBudget,
} from '@leadline/runtime';
import { z } from 'zod';
import { projections } from './projections';
import { startProjector } from './projector';

const config = loadConfig(
  infrastructureConfig.extend(metricsConfig).extend({
    /** Partitions applied at once: a command waits for its partition only, not behind the others. */
    PROJECTOR_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  }),
);
// One connection per partition applied at once, and one for the metrics and the generation polls.
const connections = splitConnectionBudget(
  'projector',
  config.DATABASE_MAX_CONNECTIONS ?? config.PROJECTOR_CONCURRENCY + 1,
  { projector: { share: 1 } },
);
const infrastructure = await connectInfrastructure(config, 'leadline-projector', {
  maxConnections: connections.projector,
});
const projector = await startProjector({
  ...infrastructure,
  groupId: `${config.TOPIC_PREFIX}leadline.projector`,
  projections,
  concurrency: config.PROJECTOR_CONCURRENCY,
  onCrash: exitWhenConsumerGivesUp('projector'),
});
console.warn('projector: running');
const metrics = await serveServiceMetrics(config, infrastructure.db);

const shutdown = async () => {
  await metrics?.close();
  await projector.stop();
  await infrastructure.close();
  process.exit(0);
};
process.once('SIGTERM', () => void shutdown());
process.once('SIGINT', () => void shutdown());
