import type { TopicKind } from '@leadline/events';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from './db/schema';
import { offsetIn, topicsOfKinds, type LogGeneration } from './log-generations';
import { checkpointConsumers, type CheckpointTable } from './log-records';
import { parkedTableOf } from './parking';
import { PROGRESS_CHANNEL } from './projection-progress';

/**
 * How a consumer of the log moves from one topic generation to the next (see log-generations.ts).
 * It reads the old generation to its end, then continues on the new one where live writes began:
 * everything before that point on the new generation is a copy of what it has already applied.
 * Nothing is applied twice (the copy is skipped) and nothing is skipped (the old generation is read
 * to its end first, and that end is final: nothing is appended to it after the cutover read it).
 */

/** The topics a consumer reads, as kinds of the log's topics under one prefix. */
export interface ConsumerLayout {
  prefix: string;
  kinds: TopicKind[];
}

type Positions = Map<string, bigint>;
const slot = (topic: string, partition: number) => `${topic}\u0000${partition}`;

/** The consumer's checkpoints on `topics`. */
export async function checkpointsOn(
  db: Kysely<Database> | Transaction<Database>,
  table: CheckpointTable,
  topics: string[],
): Promise<Positions> {
  if (topics.length === 0) return new Map();
  const rows = await db
    .selectFrom(table)
    .select(['topic', 'partition', 'next_offset'])
    .where('topic', 'in', topics)
    .execute();
  return new Map(rows.map((row) => [slot(row.topic, row.partition), BigInt(row.next_offset)]));
}

/**
 * The offset past which nothing of `generation` is applied, per partition of `layout`'s topics: its
 * end, once it has one.
 */
export function endLimits(generation: LogGeneration, layout: ConsumerLayout): Positions {
  const limits: Positions = new Map();
  if (!generation.endOffsets) return limits;
  for (const topic of topicsOfKinds(layout.prefix, generation.generation, layout.kinds)) {
    (generation.endOffsets[topic] ?? []).forEach((end, partition) =>
      limits.set(slot(topic, partition), BigInt(end)),
    );
  }
  return limits;
}

export const limitKey = slot;

/** Whether the checkpoints have reached the end of every partition of the generation's topics. */
export function drained(generation: LogGeneration, layout: ConsumerLayout, checkpoints: Positions): boolean {
  if (!generation.endOffsets) return false;
  return [...endLimits(generation, layout)].every(
    ([key, end]) => end === 0n || (checkpoints.get(key) ?? 0n) >= end,
  );
}

/**
 * The generation a consumer reads: the newest one it holds a position on (once a consumer moves on,
 * it has positions on the new generation), or the active one for a consumer that has never read the
 * log, which then reads the whole history there.
 */
export async function generationToRead(
  db: Kysely<Database>,
  table: CheckpointTable,
  layout: ConsumerLayout,
  generations: readonly LogGeneration[],
): Promise<{ generation: LogGeneration; fresh: boolean }> {
  const { rows } = await sql<{ topic: string }>`
    select distinct topic from ${sql.table(table)}`.execute(db);
  const positioned = new Set(rows.map((row) => row.topic));
  const readable = generations.filter((generation) => generation.state !== 'migrating');
  for (const generation of [...readable].reverse()) {
    const topics = topicsOfKinds(layout.prefix, generation.generation, layout.kinds);
    if (topics.some((topic) => positioned.has(topic))) return { generation, fresh: false };
  }
  const active = readable.find((generation) => generation.state === 'active');
  if (!active) throw new Error('log_generations has no active generation');
  return { generation: active, fresh: true };
}

/**
 * A consumer that has never read the log reads its whole history on the active generation, from
 * offset 0 of each partition: it is placed there, so that it stays on that generation if it stops
 * before its first batch. The earlier generations (still drained by others, or retired) hold nothing
 * it does not read there, so it is placed at their ends, as far on them as a consumer that read them
 * and moved over (a rebuild's fresh read models then compare with the live ones position for
 * position).
 */
export async function placeFreshConsumer(
  db: Kysely<Database>,
  table: CheckpointTable,
  layout: ConsumerLayout,
  generations: readonly LogGeneration[],
  active: LogGeneration,
  now: Date,
): Promise<void> {
  const ends = generations
    .filter((generation) => generation.state === 'draining' || generation.state === 'retired')
    .flatMap((generation) =>
      [...endLimits(generation, layout)].map(([key, end]) => {
        const [topic, partition] = key.split('\u0000') as [string, string];
        return { topic, partition: Number(partition), next_offset: end.toString(), updated_at: now };
      }),
    );
  const starts = topicsOfKinds(layout.prefix, active.generation, layout.kinds).flatMap((topic, index) =>
    Array.from({ length: active.partitions[layout.kinds[index]!] }, (_, partition) => ({
      topic,
      partition,
      next_offset: '0',
      updated_at: now,
    })),
  );
  const rows = [...ends, ...starts];
  await db
    .insertInto(table)
    .values(rows)
    .onConflict((oc) => oc.columns(['topic', 'partition']).doNothing())
    .execute();
}

/** Where a record of `from` was copied to on generation `to`. */
async function copiedTo(
  trx: Transaction<Database>,
  to: number,
  topic: string,
  partition: number,
  offset: string,
): Promise<{ topic: string; partition: number; offset: string }> {
  const { rows } = await sql<{ topic: string; partition: number; offset: string }>`
    select target_topic as topic, target_partition as partition,
           (target_first + array_position(source_offsets, ${offset}::bigint) - 1)::text as offset
    from log_copy_chunks
    where generation = ${to} and source_topic = ${topic} and source_partition = ${partition}
      and source_first <= ${offset}::bigint and source_last >= ${offset}::bigint
      and ${offset}::bigint = any(source_offsets)`.execute(trx);
  if (!rows[0]) {
    throw new Error(
      `generation ${to} records no copy of ${topic}[${partition}]@${offset}: the migration's mapping is incomplete`,
    );
  }
  return rows[0];
}

/**
 * Moves a consumer that has drained `from` onto `to`, in one transaction, so any instance may do it
 * and doing it again changes nothing: its checkpoints on `to` start where live writes began; its
 * parked and held records move to where their copies are (the records of their streams on `to` then
 * wait behind them, as they waited on `from`); the records an operator skipped are skipped on `to`
 * too, by this consumer and by a rebuild. The projector's new positions are announced to the commands
 * waiting on them.
 */
export async function switchGeneration(
  db: Kysely<Database>,
  table: CheckpointTable,
  layout: ConsumerLayout,
  from: LogGeneration,
  to: LogGeneration,
  now: Date,
): Promise<void> {
  const fromTopics = topicsOfKinds(layout.prefix, from.generation, layout.kinds);
  const toTopics = topicsOfKinds(layout.prefix, to.generation, layout.kinds);
  const consumer = checkpointConsumers[table];
  const parked = parkedTableOf(table).table as 'parked_records';
  await db.transaction().execute(async (trx) => {
    // Under the old checkpoints' row locks: a batch of `from` still being handled (by another instance,
    // or a release of parked records) finishes first, and none starts while the records move.
    await trx.selectFrom(table).select('partition').where('topic', 'in', fromTopics).forUpdate().execute();
    const starts = toTopics.flatMap((topic, index) =>
      Array.from({ length: to.partitions[layout.kinds[index]!] }, (_, partition) => ({
        topic,
        partition,
        next_offset: offsetIn(to.startOffsets, topic, partition).toString(),
        updated_at: now,
      })),
    );
    await trx
      .insertInto(table)
      .values(starts)
      .onConflict((oc) => oc.columns(['topic', 'partition']).doNothing())
      .execute();

    const pending = await trx
      .selectFrom(parked)
      .select(['topic', 'partition', 'offset'])
      .where('consumer', '=', consumer)
      .where('topic', 'in', fromTopics)
      .where('status', 'in', ['parked', 'held'])
      .execute();
    for (const row of pending) {
      const copy = await copiedTo(trx, to.generation, row.topic, row.partition, row.offset);
      await trx
        .updateTable(parked)
        .set({ topic: copy.topic, partition: copy.partition, offset: copy.offset, updated_at: now })
        .where('consumer', '=', consumer)
        .where('topic', '=', row.topic)
        .where('partition', '=', row.partition)
        .where('offset', '=', row.offset)
        .execute();
    }

    const skipped = await trx
      .selectFrom('skipped_records')
      .selectAll()
      .where('consumer', '=', consumer)
      .where('topic', 'in', fromTopics)
      .execute();
    for (const row of skipped) {
      const copy = await copiedTo(trx, to.generation, row.topic, row.partition, row.offset);
      await trx
        .insertInto('skipped_records')
        .values({ ...row, topic: copy.topic, partition: copy.partition, offset: copy.offset })
        .onConflict((oc) => oc.columns(['consumer', 'topic', 'partition', 'offset']).doNothing())
        .execute();
    }

    if (table === 'projection_checkpoints') {
      // A `PartitionProgress[]`, as `ProjectionProgress` reads it, delivered once this commits.
      await sql`
        select pg_notify(${PROGRESS_CHANNEL}, json_agg(json_build_object(
          'topic', topic, 'partition', partition, 'next_offset', next_offset::text))::text)
        from projection_checkpoints where topic in (${sql.join(toTopics)})`.execute(trx);
    }
  });
}
