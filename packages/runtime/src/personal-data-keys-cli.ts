import { infrastructureConfig, loadConfig } from './config';
import { createDb } from './db/database';
import { migrate } from './db/migrate';
import { personalDataKeySettings, rewrapPersonalDataKeys } from './personal-data/keys';

/**
 * `npm run personal-data-keys -- rewrap`: after putting a new master key first in PERSONAL_DATA_KEYS
 * (and restarting every service with it), wraps every subject key under it; the old master key can
 * then be removed from the list.
 */
if (process.argv[2] !== 'rewrap') {
  console.error('usage: npm run personal-data-keys -- rewrap');
  process.exit(2);
}
const config = loadConfig(infrastructureConfig);
const settings = personalDataKeySettings(config);
await migrate(config.DATABASE_URL);
const db = createDb(config.DATABASE_URL, { maxConnections: 1 });
try {
  const count = await rewrapPersonalDataKeys(db, settings);
  console.log(`${count} personal-data key(s) wrapped under the newest master key.`);
} finally {
  await db.destroy();
}
