import { unavailable } from '@leadline/domain';
import type { Kysely, Transaction } from 'kysely';
import { isConnectionLost, isDatabaseBusy } from './db/database';
import type { Database } from './db/schema';

/**
 * The command's transaction. A lock or statement timeout (a setting of the database or of the
 * command), a connection refused ("too many clients") or not given in time is the database being
 * busy, not a bug: 503 `database_busy`, nothing written, retry. So is a connection lost before the
 * work finished (a restart, a failover): the session's locks went with it and nothing was appended.
 *
 * A connection lost once the work has finished fails only the COMMIT or ROLLBACK, and the work's own
 * outcome stands: its result (its events are on the log, the only source of truth, so the write
 * happened, and a lost session releases its locks), or its error (a conflict stays a conflict rather
 * than becoming whatever the failed ROLLBACK said). A decision's own rows (the unique reservations of
 * a new account) may then be lost with the COMMIT, as they were when this answered 500.
 */
export async function inTransaction<T>(
  db: Kysely<Database>,
  work: (trx: Transaction<Database>) => Promise<T>,
): Promise<T> {
  let finished: { value: T } | { error: unknown } | undefined;
  try {
    return await db.transaction().execute(async (trx) => {
      try {
        const value = await work(trx);
        finished = { value };
        return value;
      } catch (error) {
        finished = { error };
        throw error;
      }
    });
  } catch (error) {
    const ending = finished !== undefined && !('error' in finished && finished.error === error);
    if (ending && isConnectionLost(error)) {
      if ('value' in finished!) return finished.value;
      return refusedIfBusy((finished as { error: unknown }).error);
    }
    return refusedIfBusy(error);
  }
}

/** Rethrows `error`, as 503 `database_busy` if the database was busy or the connection lost. */
export function refusedIfBusy(error: unknown): never {
  if (isDatabaseBusy(error) || isConnectionLost(error)) {
    throw unavailable(
      'database_busy',
      'The database did not answer in time; nothing was written, retry shortly.',
    );
  }
  throw error;
}
