/**
 * A projector in a process of its own, as `services/projector/src/main.ts` runs it, with the test
 * projection `appliedEvents` beside the product's: for a test that kills it (`kill -9`) mid-batch, so
 * it leaves its consumer group without a word and without committing anything. Configured by the
 * same environment as the projector's main module.
 */
import { projections, startProjector } from '@leadline/projector';
import { connectInfrastructure, infrastructureConfig, loadConfig } from '@leadline/runtime';
import { appliedEvents } from './log';

const config = loadConfig(infrastructureConfig);
const infrastructure = await connectInfrastructure(config, 'leadline-projector-test', { maxConnections: 3 });
await startProjector({
  ...infrastructure,
  groupId: `${config.TOPIC_PREFIX}leadline.projector`,
  projections: [...projections, appliedEvents],
  concurrency: 2,
  onCrash: (error) => console.error('projector: consumer crashed', error),
});
console.warn('projector: running');
