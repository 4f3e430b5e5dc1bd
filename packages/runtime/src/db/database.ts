import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Database } from './schema';

export const READ_MODEL_SCHEMA = 'read_model';

// int8 columns (offsets, counts) come back as strings by default; counts fit in a JS number.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => value);

export interface DbOptions {
  /** The read-model schema to resolve unqualified table names in; `rebuild` points this elsewhere. */
  readModelSchema?: string;
  maxConnections?: number;
}

export function createPool(url: string, options: DbOptions = {}): pg.Pool {
  const schema = options.readModelSchema ?? READ_MODEL_SCHEMA;
  const pool = new pg.Pool({
    connectionString: url,
    max: options.maxConnections ?? 20,
    // Unqualified names resolve to the read models first, then to operational tables in public. A
    // schema swap by `rebuild` is then picked up by the next query without reconnecting.
    options: `-c search_path=${schema},public`,
  });
  // An idle connection the server closed (a restart, a failover) is dropped from the pool and
  // replaced on next use; without a listener it would take the whole process down.
  pool.on('error', (error) => console.warn(`postgres: idle connection lost: ${error.message}`));
  // A connection lost while checked out (a transaction waiting on a webhook answer, say) fails its
  // next query; without a listener its 'error' event would take the whole process down first.
  pool.on('connect', (client) => {
    client.on('error', (error) => console.warn(`postgres: connection lost: ${error.message}`));
  });
  return pool;
}

export function createDb(url: string, options: DbOptions = {}): Kysely<Database> {
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool: createPool(url, options) }) });
}
