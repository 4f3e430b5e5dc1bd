import type { LogGenerationTables } from './schema/log-generations';
import type { MessagingTables } from './schema/messaging';
import type { OperationalTables } from './schema/operational';
import type { ReadModelTables } from './schema/read-model';
import type { WebhookRelayTables } from './schema/webhook-relay';
import type { WorkerTables } from './schema/workers';

// The database's tables, by area (schema/): the read models the projector builds in `read_model`,
// and the operational state in `public` that is not derived from the log.
export type * from './schema/log-generations';
export type * from './schema/messaging';
export type * from './schema/operational';
export type * from './schema/parked';
export type * from './schema/read-model';
export type * from './schema/webhook-relay';
export type * from './schema/workers';

export type Database = ReadModelTables &
  OperationalTables &
  MessagingTables &
  WorkerTables &
  WebhookRelayTables &
  LogGenerationTables;
