import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Database } from './schema';

export const READ_MODEL_SCHEMA = 'read_model';

// int8 columns (offsets, counts) come back as strings by default; counts fit in a JS number.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => value);

/**
 * Bounds on every connection, so a stuck peer (a lost lock holder, a forgotten transaction, a network
 * partition) fails the one operation that met it instead of hanging a pool. 0 turns a bound off.
 */
export interface DbTimeouts {
  /** Waiting for a new connection (and for a free one in the pool). */
  connectMs: number;
  /** One statement; long ones (migrations, `rebuild`) get 0 instead. */
  statementMs: number;
  /** Waiting for any lock, the account's advisory lock included. */
  lockMs: number;
  /**
   * A transaction left open with nothing running: the server ends the session and its locks. Above
   * PROJECTION_WAIT_MS + EVENT_LOG_TIMEOUT_MS, the longest a command's transaction waits on purpose.
   */
  idleInTransactionMs: number;
}

export const defaultDbTimeouts: DbTimeouts = {
  connectMs: 5_000,
  statementMs: 30_000,
  lockMs: 15_000,
  idleInTransactionMs: 60_000,
};

export interface DbOptions {
  /** The read-model schema to resolve unqualified table names in; `rebuild` points this elsewhere. */
  readModelSchema?: string;
  maxConnections?: number;
  timeouts?: Partial<DbTimeouts>;
}

export function createPool(url: string, options: DbOptions = {}): pg.Pool {
  const schema = options.readModelSchema ?? READ_MODEL_SCHEMA;
  const timeouts = { ...defaultDbTimeouts };
  for (const [name, value] of Object.entries(options.timeouts ?? {}))
    if (value !== undefined) timeouts[name as keyof DbTimeouts] = value;
  const pool = new pg.Pool({
    connectionString: url,
    max: options.maxConnections ?? 20,
    connectionTimeoutMillis: timeouts.connectMs,
    // Unqualified names resolve to the read models first, then to operational tables in public. A
    // schema swap by `rebuild` is then picked up by the next query without reconnecting. The timeouts
    // are session settings, so they hold for every statement, whoever runs it.
    options: [
      `-c search_path=${schema},public`,
      `-c statement_timeout=${timeouts.statementMs}`,
      `-c lock_timeout=${timeouts.lockMs}`,
      `-c idle_in_transaction_session_timeout=${timeouts.idleInTransactionMs}`,
    ].join(' '),
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

/**
 * SQLSTATEs that mean "not now" rather than "wrong": `lock_timeout`, `statement_timeout`, a server at
 * its `max_connections` or a role at its `CONNECTION LIMIT` ("too many clients"), a server starting
 * up or shutting down.
 */
const BUSY_SQLSTATES = new Set(['55P03', '57014', '53300', '57P03']);
/** What pg says when no connection came in time: none free in the pool, or the server's too slow. */
const NO_CONNECTION_IN_TIME = [
  'timeout exceeded when trying to connect',
  'Connection terminated due to connection timeout',
];

/**
 * A database that did not answer in time or refused a connection: busy, not broken. Callers answer
 * 503 `database_busy` with `Retry-After`, having written nothing (the statement, or the transaction
 * it was part of, did not run or was rolled back). A connection lost mid-transaction is not one: the
 * outcome of its commit may be unknown.
 */
export function isDatabaseBusy(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && (BUSY_SQLSTATES.has(code) || code === 'ECONNREFUSED')) return true;
  return typeof message === 'string' && NO_CONNECTION_IN_TIME.includes(message);
}

/**
 * SQLSTATEs of a session the server ended: an administrator's command (a fast shutdown or restart,
 * `pg_terminate_backend`), a crash shutdown, an idle session timed out.
 */
const ENDED_SQLSTATES = new Set(['57P01', '57P02', '57P05']);
/** What pg and the socket say of a connection that broke, or of a client used after its connection broke. */
const LOST_MESSAGES = [
  'Connection terminated unexpectedly',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
];
const LOST_SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE']);

/**
 * A connection lost while in use (a restart, a failover, a terminated backend): whatever its statement
 * or transaction was, it did not commit, unless the loss came during the COMMIT itself, whose outcome
 * is then unknown. A read that meets one answers 503 `database_busy`; the command bus decides for a
 * write (its transaction only holds locks and reads, see `inTransaction`).
 */
export function isConnectionLost(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (
    typeof code === 'string' &&
    (ENDED_SQLSTATES.has(code) || code.startsWith('08') || LOST_SOCKET_CODES.has(code))
  )
    return true;
  return typeof message === 'string' && LOST_MESSAGES.includes(message);
}
