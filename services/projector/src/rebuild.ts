import type { EventCodec, TopicNames } from '@leadline/events';
import {
  createDb,
  migrate,
  READ_MODEL_SCHEMA,
  type Database,
  type PersonalDataKeys,
} from '@leadline/runtime';
import { sql, type Kysely } from 'kysely';
import type { Kafka } from 'kafkajs';
import { APPLY_LOCK } from './apply-batch';
import type { Projection } from './projection';
import { startProjector } from './projector';

export interface RebuildDeps {
  kafka: Kafka;
  databaseUrl: string;
  /** The live database handle; the swap happens through it. */
  db: Kysely<Database>;
  codec: EventCodec;
  topics: TopicNames;
  groupPrefix: string;
  projections: readonly Projection[];
  /** A rebuild applies erasures too (see `ProjectorDeps`). */
  personalDataKeys: PersonalDataKeys;
  log?: (message: string) => void;
  /**
   * Bound on holding every live batch (and so every write) for the swap: past it the swap is
   * abandoned and the live read models stay as they were. 10 s by default.
   */
  swapWaitMs?: number;
  /** Bound on projecting the whole log into the new schema; 1 hour by default. */
  catchUpMs?: number;
}

type Offsets = Map<string, bigint>;
const keyOf = (topic: string, partition: number) => `${topic}:${partition}`;

async function checkpointsOf(db: Kysely<Database>): Promise<Offsets> {
  const rows = await db.selectFrom('projection_checkpoints').selectAll().execute();
  return new Map(rows.map((row) => [keyOf(row.topic, row.partition), BigInt(row.next_offset)]));
}

/**
 * Waits until the side schema has applied `targets`, or fails: past `deadline` (a side projector
 * that is stuck or far behind) or as soon as the side projector has crashed for good.
 */
async function waitUntilReached(
  db: Kysely<Database>,
  targets: Offsets,
  deadline: number,
  crashed: () => Error | undefined,
): Promise<void> {
  for (;;) {
    const reached = await checkpointsOf(db);
    if ([...targets].every(([key, offset]) => (reached.get(key) ?? 0n) >= offset)) return;
    const failure = crashed();
    if (failure) throw new Error(`rebuild: the new read models stopped projecting: ${failure.message}`);
    if (Date.now() > deadline) throw new Error('rebuild: the new read models did not catch up in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The prefix of read-model schemas kept after a swap: the way back. */
export const RETIRED_PREFIX = `${READ_MODEL_SCHEMA}_retired_`;

/** A Postgres lock wait cut short by `lock_timeout`. */
const isLockTimeout = (error: unknown) => (error as { code?: string }).code === '55P03';

/** Rejects past `ms`; the work itself goes on (it is only given up on). */
async function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`rebuild: ${what} took longer than ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Brings the read models in `schema` up to the end of the log with a side projector, then swaps them
 * in for `read_model`, which is kept (renamed to `read_model_retired_<time>`), never dropped.
 * While the schema catches up the live projector keeps serving; for the swap itself every live batch
 * is held (the exclusive apply lock), the schema catches up with exactly what the live one has
 * applied, and the two schemas trade names in one transaction. Holding the lock is bounded by
 * `swapWaitMs`, waiting for it included: past it the transaction ends, the lock with it, and nothing
 * is swapped.
 */
async function swapIn(
  deps: RebuildDeps,
  schema: string,
  log: (message: string) => void,
): Promise<{ retired: string; records: number }> {
  const swapWaitMs = deps.swapWaitMs ?? 10_000;
  const sideDb = createDb(deps.databaseUrl, {
    readModelSchema: schema,
    maxConnections: 4,
    // Catching up from offset 0 applies big batches into tables with no reader waiting on them.
    timeouts: { statementMs: 0 },
  });
  const groupId = `${deps.groupPrefix}projector-${schema}-${Date.now()}`;
  const admin = deps.kafka.admin();
  await admin.connect();
  let crash: Error | undefined;
  const projector = await startProjector({
    ...deps,
    db: sideDb,
    groupId,
    live: false,
    onCrash: (error, willRestart) => {
      if (!willRestart) crash = error;
    },
  });
  const crashed = () => crash;
  // One stop, awaited by whoever asks again: a stop given up on at the swap's bound is still awaited
  // before the schema's connections are closed.
  let stopping: Promise<void> | undefined;
  const stopProjector = () => (stopping ??= projector.stop());
  try {
    const highWatermarks: Offsets = new Map();
    for (const topic of Object.values(deps.topics)) {
      for (const { partition, high } of await admin.fetchTopicOffsets(topic)) {
        highWatermarks.set(keyOf(topic, partition), BigInt(high));
      }
    }
    log(`projecting ${schema} up to the current end of the log`);
    await waitUntilReached(sideDb, highWatermarks, Date.now() + (deps.catchUpMs ?? 3_600_000), crashed);
    log(`swapping ${schema} in for ${READ_MODEL_SCHEMA}`);
    const retired = `${RETIRED_PREFIX}${Date.now()}`;
    const deadline = Date.now() + swapWaitMs;
    await deps.db.transaction().execute(async (trx) => {
      // Bounded: a live batch that holds the apply lock (or a queue of them) cannot keep the swap, and
      // every write queued behind it, waiting.
      await sql`select set_config('lock_timeout', ${`${swapWaitMs}ms`}, true)`.execute(trx);
      try {
        await sql`select pg_advisory_xact_lock(${APPLY_LOCK})`.execute(trx);
      } catch (error) {
        if (!isLockTimeout(error)) throw error;
        throw new Error(
          `rebuild: live batches held the apply lock for more than ${swapWaitMs} ms; nothing swapped`,
          { cause: error },
        );
      }
      // Bounded: this holds every live batch, and so every write waiting for the projector.
      await waitUntilReached(sideDb, await checkpointsOf(trx), deadline, crashed);
      // Nothing may write into the schema once it carries the live name.
      await within(Math.max(deadline - Date.now(), 1), 'stopping the side projector', stopProjector());
      await sql`alter schema ${sql.id(READ_MODEL_SCHEMA)} rename to ${sql.id(retired)}`.execute(trx);
      await sql`alter schema ${sql.id(schema)} rename to ${sql.id(READ_MODEL_SCHEMA)}`.execute(trx);
    });
    log(
      `swapped; the previous read models are kept as ${retired} (\`npm run rebuild -- --rollback\` swaps them back; drop the schema once satisfied)`,
    );
    const records = [...highWatermarks.values()].reduce((sum, offset) => sum + offset, 0n);
    return { retired, records: Number(records) };
  } finally {
    await stopProjector().catch(() => undefined);
    await sideDb.destroy();
    await admin.deleteGroups([groupId]).catch(() => undefined);
    await admin.disconnect();
  }
}

/**
 * Projects the whole log from offset 0 into a fresh schema, then swaps it in for `read_model` (see
 * `swapIn`). If anything fails before the swap, the live read models are as they were and the
 * half-built schema is dropped.
 */
export async function rebuild(
  deps: RebuildDeps,
): Promise<{ schema: string; retired: string; records: number }> {
  const log = deps.log ?? (() => undefined);
  const side = `read_model_rebuild_${Date.now()}`;
  await migrate(deps.databaseUrl, side);
  try {
    const { retired, records } = await swapIn(deps, side, log);
    return { schema: side, retired, records };
  } catch (error) {
    await sql`drop schema if exists ${sql.id(side)} cascade`.execute(deps.db);
    throw error;
  }
}

/** The read-model schemas kept by earlier swaps, newest first. */
export async function retiredSchemas(db: Kysely<Database>): Promise<string[]> {
  const { rows } = await sql<{ schema_name: string }>`
    select schema_name from information_schema.schemata where starts_with(schema_name, ${RETIRED_PREFIX})
  `.execute(db);
  return rows
    .map((row) => row.schema_name)
    .sort((a, b) => Number(b.slice(RETIRED_PREFIX.length)) - Number(a.slice(RETIRED_PREFIX.length)));
}

/**
 * `npm run rebuild -- --rollback`: the way back from a swap. The newest kept read models (the ones the
 * last swap retired) are brought up to the end of the log and swapped in, exactly as a rebuild's are;
 * the current ones are kept in turn, so a second rollback goes forward again. If anything fails,
 * nothing is swapped and both schemas stay as they were.
 */
export async function rollback(
  deps: RebuildDeps,
): Promise<{ schema: string; retired: string; records: number }> {
  const log = deps.log ?? (() => undefined);
  const [previous] = await retiredSchemas(deps.db);
  if (!previous) throw new Error('rebuild: there are no previous read models to go back to');
  // Kept read models may predate a migration that shipped since.
  await migrate(deps.databaseUrl, previous);
  const { retired, records } = await swapIn(deps, previous, log);
  return { schema: previous, retired, records };
}
