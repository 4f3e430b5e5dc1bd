import { parseArgs } from 'node:util';
import { declaredDurability } from './log-durability';
import { infrastructureConfig, loadConfig } from './config';
import { connectInfrastructure } from './infrastructure';
import {
  abortMigration,
  migrateLog,
  migrationStatus,
  retireGeneration,
  type MigrateLogDeps,
} from './log-migration';
import { logTransforms } from './log-transforms';

const usage = `usage:
  npm run migrate-log -- --partitions <n> [--partner-partitions <n>] [--transform <name>]
                         [--cutover-lag <records>] [--fence-wait-ms <ms>] [--batch-records <n>]
  npm run migrate-log -- --status
  npm run migrate-log -- --retire
  npm run migrate-log -- --abort
transforms: ${Object.keys(logTransforms).join(', ')}`;

/**
 * `npm run migrate-log`: moves the log to a new generation of topics (more partitions, or its history
 * rewritten through a transform) and cuts producers and consumers over; `--retire` deletes the old
 * generation once every consumer has left it. Run it again after an interruption: it resumes.
 */
const { values } = parseArgs({
  options: {
    partitions: { type: 'string' },
    'partner-partitions': { type: 'string' },
    transform: { type: 'string', default: 'identity' },
    'cutover-lag': { type: 'string' },
    'fence-wait-ms': { type: 'string' },
    'batch-records': { type: 'string' },
    status: { type: 'boolean' },
    retire: { type: 'boolean' },
    abort: { type: 'boolean' },
  },
});

const positive = (name: string, value: string | undefined) => {
  if (value === undefined) return undefined;
  if (!/^[1-9]\d*$/.test(value)) {
    console.error(`--${name} must be a positive whole number\n${usage}`);
    process.exit(2);
  }
  return Number(value);
};
const partitions = positive('partitions', values.partitions);
const partnerPartitions = positive('partner-partitions', values['partner-partitions']);
const cutoverLagRecords = positive('cutover-lag', values['cutover-lag']);
const fenceWaitMs = positive('fence-wait-ms', values['fence-wait-ms']);
const batchRecords = positive('batch-records', values['batch-records']);
const makeTransform = logTransforms[values.transform];
if (!makeTransform || (!values.status && !values.retire && !values.abort && partitions === undefined)) {
  console.error(usage);
  process.exit(2);
}

const config = loadConfig(infrastructureConfig);
// The fence waits on a lock for as long as its own bound says; no statement timeout cuts it short.
const infrastructure = await connectInfrastructure(
  { ...config, DATABASE_STATEMENT_TIMEOUT_MS: 0 },
  'leadline-migrate-log',
  { maxConnections: 4 },
);
const deps: MigrateLogDeps = {
  ...infrastructure,
  schemaRegistryUrl: config.SCHEMA_REGISTRY_URL,
  prefix: config.TOPIC_PREFIX,
  durability: declaredDurability(config),
  log: (message) => console.log(`migrate-log: ${message}`),
};
try {
  if (values.status) {
    for (const line of await migrationStatus(deps)) console.log(line);
  } else if (values.retire) {
    const { generation, topics } = await retireGeneration(deps);
    console.log(`migrate-log: generation ${generation} retired; deleted ${topics.join(', ')}`);
  } else if (values.abort) {
    const generation = await abortMigration(deps);
    console.log(
      `migrate-log: the migration to generation ${generation} is abandoned; its topics are deleted`,
    );
  } else {
    const started = Date.now();
    const report = await migrateLog(deps, {
      partitions: partitions!,
      partnerPartitions,
      transform: await makeTransform({ db: infrastructure.db }),
      cutoverLagRecords,
      fenceWaitMs,
      batchRecords,
    });
    console.log(
      `migrate-log: done in ${Date.now() - started} ms: generation ${report.to} active, ${report.copied} records copied by this run, writes fenced for ${report.fenceMs} ms. ` +
        'Watch `npm run migrate-log -- --status` until every consumer is on the new generation, then run `npm run migrate-log -- --retire`.',
    );
  }
} catch (error) {
  console.error((error as Error).message);
  process.exitCode = 1;
} finally {
  await infrastructure.close();
}
