import { parseArgs } from 'node:util';
import {
  connectInfrastructure,
  createDocumentStore,
  documentStoreConfig,
  infrastructureConfig,
  loadConfig,
} from '@leadline/runtime';
import { projections } from './projections';
import { rebuild, rollback } from './rebuild';

/**
 * `npm run rebuild`: re-projects every read model from offset 0 and swaps the result in, keeping the
 * previous read models. `npm run rebuild -- --rollback` swaps the kept ones back in (brought up to the
 * end of the log first).
 */
const { values } = parseArgs({ options: { rollback: { type: 'boolean', default: false } } });
const config = loadConfig(infrastructureConfig.extend(documentStoreConfig));
const infrastructure = await connectInfrastructure(config, 'leadline-rebuild');
try {
  const started = Date.now();
  const run = values.rollback ? rollback : rebuild;
  const { schema, records } = await run({
    ...infrastructure,
    databaseUrl: config.DATABASE_URL,
    groupPrefix: config.TOPIC_PREFIX,
    projections,
    documents: createDocumentStore(config, infrastructure.db, infrastructure.personalDataKeys),
    log: (message) => console.log(`rebuild: ${message}`),
  });
  console.log(
    values.rollback
      ? `rebuild: rolled back to ${schema} in ${Date.now() - started} ms`
      : `rebuild: done, ${records} records projected in ${Date.now() - started} ms`,
  );
} finally {
  await infrastructure.close();
}
