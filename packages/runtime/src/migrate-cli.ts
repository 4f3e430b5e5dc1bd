import { infrastructureConfig, loadConfig } from './config';
import { migrate } from './db/migrate';

/** `npm run migrate`: creates the database if needed and brings every schema to the latest version. */
const config = loadConfig(infrastructureConfig);
await migrate(config.DATABASE_URL);
console.log('migrate: database is up to date');
