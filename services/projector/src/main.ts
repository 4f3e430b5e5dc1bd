import {
  connectInfrastructure,
  infrastructureConfig,
  loadConfig,
  metricsConfig,
  serveServiceMetrics,
} from '@leadline/runtime';
import { projections } from './projections';
import { startProjector } from './projector';

const config = loadConfig(infrastructureConfig.extend(metricsConfig));
const infrastructure = await connectInfrastructure(config, 'leadline-projector', { maxConnections: 4 });
const projector = await startProjector({
  ...infrastructure,
  groupId: `${config.TOPIC_PREFIX}leadline.projector`,
  projections,
  onCrash: (error, willRestart) => {
    console.error('projector: consumer crashed', error);
    // A record it cannot apply stops it for good; exit so the supervisor sees it and restarts it.
    if (!willRestart) process.exit(1);
  },
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
