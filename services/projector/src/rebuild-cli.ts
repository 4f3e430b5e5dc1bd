import { connectInfrastructure, infrastructureConfig, loadConfig } from '@leadline/runtime';
import { projections } from './projections';
import { rebuild } from './rebuild';

/** `npm run rebuild`: re-projects every read model from offset 0 and swaps the result in. */
const config = loadConfig(infrastructureConfig);
const infrastructure = await connectInfrastructure(config, 'leadline-rebuild');
try {
  const started = Date.now();
  const { records } = await rebuild({
    ...infrastructure,
    databaseUrl: config.DATABASE_URL,
    groupPrefix: config.TOPIC_PREFIX,
    projections,
    log: (message) => console.log(`rebuild: ${message}`),
  });
  console.log(`rebuild: done, ${records} records projected in ${Date.now() - started} ms`);
} finally {
  await infrastructure.close();
}
