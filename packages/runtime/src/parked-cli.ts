import { parseArgs } from 'node:util';
import { infrastructureConfig, loadConfig } from './config';
import { createDb } from './db/database';
import { checkpointConsumers } from './log-records';
import { listParked, requestRetry, skipParked, type ParkedRecordAddress } from './parking';

const consumers = new Set(Object.values(checkpointConsumers));

const usage = `usage:
  npm run parked -- list [--all]
  npm run parked -- retry <consumer> <topic> <partition> <offset>
  npm run parked -- skip <consumer> <topic> <partition> <offset> --reason "<why>"
consumers: ${[...consumers].join(', ')}`;

/** `npm run parked`: operators list, retry (after a fix) or skip the records consumers parked. */
const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { all: { type: 'boolean' }, reason: { type: 'string' } },
});
const [command, consumer, topic, partition, offset] = positionals;
const config = loadConfig(infrastructureConfig);
const db = createDb(config.DATABASE_URL, { maxConnections: 1 });

function address(): ParkedRecordAddress {
  if (!consumer || !topic || !partition || !offset || !/^\d+$/.test(partition) || !/^\d+$/.test(offset)) {
    console.error(usage);
    process.exit(2);
  }
  return { consumer, topic, partition: Number(partition), offset };
}

try {
  if (command === 'list') {
    const rows = await listParked(db, { all: values.all ?? false });
    for (const row of rows) {
      console.log(
        [
          row.consumer,
          row.topic,
          row.partition,
          row.offset,
          row.status,
          row.stream_key ?? '-',
          row.event_type ?? '-',
          row.parked_at.toISOString(),
          row.retry_requested_at ? 'retry requested' : '',
          row.error ?? '',
        ].join('\t'),
      );
    }
    console.log(`${rows.length} record(s)`);
  } else if (command === 'retry') {
    const found = await requestRetry(db, address(), new Date());
    console.log(found ? 'retry requested; the consumer applies it within a second' : 'no such parked record');
    process.exitCode = found ? 0 : 1;
  } else if (command === 'skip') {
    if (!values.reason) {
      console.error('skip needs --reason "<why>": skipping loses what the record says.');
      process.exit(2);
    }
    const found = await skipParked(db, address(), values.reason, new Date());
    console.log(found ? 'skipped; the records held behind it are applied next' : 'no such parked record');
    process.exitCode = found ? 0 : 1;
  } else {
    console.error(usage);
    process.exitCode = 2;
  }
} finally {
  await db.destroy();
}
