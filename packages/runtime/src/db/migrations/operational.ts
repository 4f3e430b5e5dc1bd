import type { Migration } from 'kysely/migration';
import { carrierRegistrationOperationalMigrations } from './carrier-registration';
import { messagingOperationalMigrations } from './messaging';
import { partnerAccessOperationalMigrations } from './partner-access';
import { personalDataOperationalMigrations } from './personal-data';
import { smsPacingOperationalMigrations } from './sms-pacing';
import { webhookRelayOperationalMigrations } from './webhook-relay';
import { workerOperationalMigrations } from './workers';

export { reserveExistingPhoneNumbers, reserveExistingSlugs } from './partner-access';

/**
 * Tables in `public` that are not derived from the log (see OperationalTables), one file an area. The
 * migrator orders them by name, so the file a migration lives in changes nothing for a database.
 */
export const operationalMigrations: Record<string, Migration> = {
  ...partnerAccessOperationalMigrations,
  ...webhookRelayOperationalMigrations,
  ...messagingOperationalMigrations,
  ...workerOperationalMigrations,
  ...personalDataOperationalMigrations,
  ...carrierRegistrationOperationalMigrations,
  ...smsPacingOperationalMigrations,
};
