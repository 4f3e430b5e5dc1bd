import { UnknownEventTypeError, type EventCodec } from '@leadline/events';
import { sql, type Transaction } from 'kysely';
import type { Database } from '../db/schema';
import type { CheckpointTable, PositionedEvent } from '../log-records';
import { parkedTableOf, parkingFailure, sortOutRecords } from '../parking';
import { PROGRESS_CHANNEL } from '../projection-progress';

/**
 * A consumer's records and checkpoints: decoding a fetched batch (an undecodable record becomes a
 * parking failure, an unknown type is passed over), the checkpoint that makes a redelivered batch a
 * no-op, and moving it past what was handled.
 */

export async function decodeRecord(
  codec: EventCodec,
  offset: string,
  key: string | null,
  value: Buffer | null,
): Promise<PositionedEvent> {
  if (!value) return { offset, key, value, event: undefined };
  try {
    return { offset, key, value, event: await codec.decode(value) };
  } catch (error) {
    // A newer producer's event type: skip it and move on (tolerant reader). Anything else, such as a
    // record that does not match its schema, is parked rather than lost or allowed to stop the log.
    if (error instanceof UnknownEventTypeError) return { offset, key, value, event: undefined };
    return { offset, key, value, event: undefined, failure: parkingFailure(error) };
  }
}

export function decodeAll(
  codec: EventCodec,
  messages: {
    offset: string;
    key: Buffer | null;
    value: Buffer | null;
    headers?: Record<string, Buffer | string | (Buffer | string)[] | undefined>;
  }[],
  decodes: ((eventType: string | undefined) => boolean) | undefined,
): Promise<PositionedEvent[]> {
  return Promise.all(
    messages.map(({ offset, key, value, headers }): Promise<PositionedEvent> | PositionedEvent => {
      const stream = key?.toString() ?? null;
      // Passed over undecoded: a type the consumer never acts on, as its producer's header says.
      if (decodes && !decodes(headers?.['event-type']?.toString()))
        return { offset, key: stream, value, event: undefined };
      return decodeRecord(codec, offset, stream, value);
    }),
  );
}

/** The log lacks records between a consumer's checkpoint and what it can fetch: it stops on this. */
export class LogGapError extends Error {
  override name = 'LogGapError';
}

/** A batch starts past the partition's checkpoint: the consumer must continue from the checkpoint. */
export class CheckpointBehindError extends Error {
  override name = 'CheckpointBehindError';
  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly checkpoint: bigint,
    readonly firstOffset: bigint,
  ) {
    super(
      `${topic}[${partition}]: the batch starts at offset ${firstOffset}, past the checkpoint ${checkpoint}`,
    );
  }
}

/**
 * The records of a batch not yet handled, with the partition's checkpoint row locked for the rest of
 * the transaction. Records below the checkpoint were handled by an earlier delivery of the batch, so
 * a redelivered batch is skipped; the lock keeps two consumers (during a rebalance) from both
 * handling it.
 */
export async function freshRecords(
  trx: Transaction<Database>,
  table: CheckpointTable,
  topic: string,
  partition: number,
  records: readonly PositionedEvent[],
  now: Date,
): Promise<PositionedEvent[]> {
  // Created on first sight, and locked either way: an upsert that rewrites nothing but takes the row's
  // lock, in one round trip.
  const checkpoint = await trx
    .insertInto(table)
    .values({ topic, partition, next_offset: '0', updated_at: now })
    .onConflict((oc) =>
      oc
        .columns(['topic', 'partition'])
        .doUpdateSet((eb) => ({ next_offset: eb.ref(`${table}.next_offset`) })),
    )
    .returning('next_offset')
    .executeTakeFirstOrThrow();
  const from = BigInt(checkpoint.next_offset);
  // Under the checkpoint's lock, so no other delivery can move it meanwhile: records that start past it
  // would leave the ones between never applied (the consumer's position is ahead of PostgreSQL: a
  // restore, a failover, read models swapped back). Nothing is applied; the consumer seeks back.
  const firstNew = records.find((record) => !record.replayed);
  if (firstNew && BigInt(firstNew.fetchedFrom ?? firstNew.offset) > from) {
    throw new CheckpointBehindError(topic, partition, from, BigInt(firstNew.offset));
  }
  const live = records.filter((record) => record.replayed || BigInt(record.offset) >= from);
  // Under the checkpoint's lock: parks what cannot be applied and holds back what waits behind it.
  return sortOutRecords(trx, parkedTableOf(table), topic, partition, live, now);
}

/**
 * Moves the partition's checkpoint past `lastOffset`, in the transaction that handled the records.
 * With `notifyProgress` (the live projector) the same statement tells the commands waiting on
 * `ProjectionProgress` how far the partition is applied, delivered only if and when the transaction
 * commits: one round trip a batch.
 */
export async function advanceCheckpoint(
  trx: Transaction<Database>,
  table: CheckpointTable,
  topic: string,
  partition: number,
  lastOffset: string,
  now: Date,
  options: { notifyProgress?: boolean } = {},
): Promise<string> {
  const candidate = (BigInt(lastOffset) + 1n).toString();
  // A retry applies records below the checkpoint; the checkpoint never moves back.
  const { rows } = await sql<{ next_offset: string }>`
    with moved as (
      update ${sql.table(table)}
      set next_offset = greatest(next_offset, ${candidate}::bigint), updated_at = ${now}
      where topic = ${topic} and partition = ${partition}
      returning next_offset::text as next_offset
    )
    select next_offset${
      options.notifyProgress
        ? // A `PartitionProgress[]`, as `ProjectionProgress` reads it.
          sql`, pg_notify(${PROGRESS_CHANNEL}, json_build_array(json_build_object(
            'topic', ${topic}::text, 'partition', ${partition}::int, 'next_offset', next_offset))::text)`
        : sql``
    } from moved`.execute(trx);
  if (!rows[0]) throw new Error(`No checkpoint in ${table} for ${topic}/${partition}`);
  return rows[0].next_offset;
}
