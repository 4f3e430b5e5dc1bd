import type { EventCodec, TopicNames } from '@leadline/events';
import { createDb, migrate, READ_MODEL_SCHEMA, type Database } from '@leadline/runtime';
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

/**
 * Projects the whole log from offset 0 into a fresh schema, then swaps it in for `read_model`.
 * While the new schema catches up the live projector keeps serving; for the swap itself the live
 * projector is held between batches, the new schema catches up with exactly what the live one has
 * applied, and the two schemas trade names in one transaction.
 */
export async function rebuild(
  deps: RebuildDeps,
): Promise<{ schema: string; retired: string; records: number }> {
  const log = deps.log ?? (() => undefined);
  const side = `read_model_rebuild_${Date.now()}`;
  await migrate(deps.databaseUrl, side);
  // Catching up from offset 0 applies big batches into tables with no reader waiting on them.
  const sideDb = createDb(deps.databaseUrl, {
    readModelSchema: side,
    maxConnections: 4,
    timeouts: { statementMs: 0 },
  });
  const groupId = `${deps.groupPrefix}projector-${side}`;
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
  try {
    const highWatermarks: Offsets = new Map();
    for (const topic of Object.values(deps.topics)) {
      for (const { partition, high } of await admin.fetchTopicOffsets(topic)) {
        highWatermarks.set(keyOf(topic, partition), BigInt(high));
      }
    }
    log(`projecting ${side} up to the current end of the log`);
    await waitUntilReached(sideDb, highWatermarks, Date.now() + (deps.catchUpMs ?? 3_600_000), crashed);

    log(`swapping ${side} in for ${READ_MODEL_SCHEMA}`);
    const retired = `${READ_MODEL_SCHEMA}_retired_${Date.now()}`;
    await deps.db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${APPLY_LOCK})`.execute(trx);
      // Bounded: this holds every live batch, and so every write waiting for the projector.
      await waitUntilReached(
        sideDb,
        await checkpointsOf(trx),
        Date.now() + (deps.swapWaitMs ?? 10_000),
        crashed,
      );
      // Nothing may write into the side schema once it carries the live name.
      await projector.stop();
      await sql`alter schema ${sql.id(READ_MODEL_SCHEMA)} rename to ${sql.id(retired)}`.execute(trx);
      await sql`alter schema ${sql.id(side)} rename to ${sql.id(READ_MODEL_SCHEMA)}`.execute(trx);
    });
    // The previous read models are kept, not dropped: the way back is to swap them in again.
    log(
      `swapped; the previous read models are kept as ${retired} (drop it once satisfied, or rename it back to go back)`,
    );
    const records = [...highWatermarks.values()].reduce((sum, offset) => sum + offset, 0n);
    return { schema: side, retired, records: Number(records) };
  } catch (error) {
    // Nothing was swapped: the live read models are as they were; the half-built schema goes.
    await projector.stop();
    await sql`drop schema if exists ${sql.id(side)} cascade`.execute(deps.db);
    throw error;
  } finally {
    await projector.stop();
    await sideDb.destroy();
    await admin.deleteGroups([groupId]).catch(() => undefined);
    await admin.disconnect();
  }
}
