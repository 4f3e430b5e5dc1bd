import { cleanText } from '@leadline/events';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Insertable } from 'kysely';
import { DomainError } from '@leadline/domain';
import { isConnectionLost, isDatabaseBusy } from './db/database';
import type { Database } from './db/schema';
import { checkpointConsumers, type CheckpointTable, type PositionedEvent } from './log-records';

/**
 * Parking: a record a consumer cannot apply (it does not decode, or applying it fails for a reason
 * that is not the infrastructure's) must not stop its partition for every account. It is parked, with
 * the error, in the consumer's parked table; every later record of the same stream (its key: the
 * account, or the partner on the partner topic) is held behind it, in log order, while every other
 * stream moves on and the checkpoint passes them all. An operator lists, retries (after a fix) or
 * skips parked records (`npm run parked`); the consumer then applies the stream's records in order.
 */

/** Where a consumer parks: its table and its name in it. */
export interface ParkingPlace {
  table: 'projection_parked_records' | 'parked_records';
  consumer: string;
}

/**
 * The projector parks beside its checkpoints, in the read models' schema (a rebuild parks afresh in
 * its own schema and the swap carries the result); the others park in `public`.
 */
export function parkedTableOf(checkpoints: CheckpointTable): ParkingPlace {
  return {
    table: checkpoints === 'projection_checkpoints' ? 'projection_parked_records' : 'parked_records',
    consumer: checkpointConsumers[checkpoints],
  };
}

export interface ParkedRecordNotice {
  topic: string;
  partition: number;
  offset: string;
  streamKey: string | null;
  eventType: string | null;
  error: string;
}

const PENDING = ['parked', 'held'] as const;

/** The error, as stored: storable text (the error may quote the very value that failed), bounded. */
export function parkingFailure(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  const text =
    error instanceof Error
      ? `${error.name}${typeof code === 'string' ? ` ${code}` : ''}: ${error.message}`
      : String(error);
  return cleanText(text).slice(0, 2000);
}

/**
 * The command bus's 503s: the read models or the log are behind or down, the log is cutting over to a
 * new generation, or the database did not answer in time (a lock or statement timeout, no connection).
 */
const TRANSIENT_REFUSALS = ['projection_lagging', 'event_log_unavailable', 'log_migrating', 'database_busy'];

/**
 * Failures of the infrastructure rather than of the record: the consumer stops and is retried as a
 * whole (nothing is parked for them). PostgreSQL classes 08 (connection), 40 (serialization,
 * deadlock), 53 (resources), 57 (operator intervention, shutdown), 58 (system) and a lock not granted
 * in time (55P03); network errors; the command bus's 503s, as a consumer that decides through it
 * meets them.
 */
export function isTransientFailure(error: unknown): boolean {
  if (error instanceof DomainError && TRANSIENT_REFUSALS.includes(error.code)) return true;
  if (isDatabaseBusy(error) || isConnectionLost(error)) return true;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (/^(08|40|53|57|58)/.test(code)) return true;
    if (/^E[A-Z]+$/.test(code)) return true; // ECONNREFUSED, ECONNRESET, ETIMEDOUT...
  }
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
    message,
  );
}

// Both parked tables have the same columns; the casts name one of them for the query builder.
const parked = (place: ParkingPlace) => place.table as 'parked_records';

/**
 * Under the partition's checkpoint lock, inside the handler's transaction: parks records that failed,
 * holds back records of streams with a record parked or held, leaves out records an operator
 * skipped, and for a retry marks the records it applies. Returns the records in order, with those not
 * to be applied replaced by placeholders (no event) so the checkpoint still passes them.
 */
export async function sortOutRecords(
  trx: Transaction<Database>,
  place: ParkingPlace,
  topic: string,
  partition: number,
  records: readonly PositionedEvent[],
  now: Date,
): Promise<PositionedEvent[]> {
  if (records.length === 0) return [];
  const table = parked(place);
  const keys = [...new Set(records.flatMap((record) => (record.key ? [record.key] : [])))];
  // One round trip for both: the pending records of the batch's streams, and the batch's records an
  // operator skipped (`stream_key` null: a pending record always has its stream's key).
  const skippedRecords = trx
    .selectFrom('skipped_records')
    .select(['offset', sql<string | null>`null`.as('stream_key')])
    .where('consumer', '=', place.consumer)
    .where('topic', '=', topic)
    .where('partition', '=', partition)
    .where(
      'offset',
      'in',
      records.map((record) => record.offset),
    );
  const found = await (
    keys.length === 0
      ? skippedRecords
      : trx
          .selectFrom(table)
          .select(['offset', 'stream_key'])
          .where('consumer', '=', place.consumer)
          .where('topic', '=', topic)
          .where('partition', '=', partition)
          .where('stream_key', 'in', keys)
          .where('status', 'in', PENDING)
          .unionAll(skippedRecords)
  ).execute();
  const pending = found.filter((row) => row.stream_key !== null);
  const skipped = new Set(found.filter((row) => row.stream_key === null).map((row) => row.offset));
  if (
    pending.length === 0 &&
    skipped.size === 0 &&
    records.every((record) => !record.failure && !record.replayed)
  )
    return [...records];

  const pendingOffsets = new Set(pending.map((row) => row.offset));
  const resolved = new Set<string>();
  const parkedNow = new Set<string>();
  const waitsBehind = (key: string | null | undefined, offset: string) =>
    key != null &&
    (parkedNow.has(key) ||
      pending.some(
        (row) => row.stream_key === key && BigInt(row.offset) < BigInt(offset) && !resolved.has(row.offset),
      ));
  const streamPending = (key: string | null | undefined) =>
    key != null &&
    (parkedNow.has(key) || pending.some((row) => row.stream_key === key && !resolved.has(row.offset)));

  const out: PositionedEvent[] = [];
  const inserts: Insertable<Database['parked_records']>[] = [];
  const applied: string[] = [];
  const row = (
    record: PositionedEvent,
    status: 'parked' | 'held',
  ): Insertable<Database['parked_records']> => ({
    consumer: place.consumer,
    topic,
    partition,
    offset: record.offset,
    stream_key: record.key ?? null,
    event_type: record.event?.type ?? null,
    value: record.value ?? null,
    error: record.failure ?? null,
    status,
    parked_at: now,
    updated_at: now,
    retry_requested_at: null,
  });

  for (const record of records) {
    const placeholder = { ...record, event: undefined };
    if (record.replayed) {
      // Already applied or skipped by another instance, or still behind an earlier parked record.
      if (!pendingOffsets.has(record.offset) || waitsBehind(record.key, record.offset)) continue;
      if (record.failure) {
        await trx
          .updateTable(table)
          .set({ status: 'parked', error: record.failure, retry_requested_at: null, updated_at: now })
          .where('consumer', '=', place.consumer)
          .where('topic', '=', topic)
          .where('partition', '=', partition)
          .where('offset', '=', record.offset)
          .execute();
        if (record.key) parkedNow.add(record.key);
        continue;
      }
      resolved.add(record.offset);
      applied.push(record.offset);
      out.push(record);
    } else if (skipped.has(record.offset)) {
      out.push(placeholder);
    } else if (streamPending(record.key)) {
      inserts.push(row(record, 'held'));
      out.push(placeholder);
    } else if (record.failure) {
      inserts.push(row(record, 'parked'));
      if (record.key) parkedNow.add(record.key);
      out.push(placeholder);
    } else {
      out.push(record);
    }
  }
  if (inserts.length > 0) {
    await trx
      .insertInto(table)
      .values(inserts)
      .onConflict((oc) => oc.columns(['consumer', 'topic', 'partition', 'offset']).doNothing())
      .execute();
  }
  if (applied.length > 0) {
    await trx
      .updateTable(table)
      .set({ status: 'applied', retry_requested_at: null, updated_at: now })
      .where('consumer', '=', place.consumer)
      .where('topic', '=', topic)
      .where('partition', '=', partition)
      .where('offset', 'in', applied)
      .execute();
  }
  return out;
}

export interface ReleasedStream {
  topic: string;
  partition: number;
  stream_key: string | null;
}

/**
 * Streams whose first waiting record may be applied now: an operator asked for a retry of the parked
 * record, or skipped it so that the next one, held, is first.
 */
export async function releasedStreams(db: Kysely<Database>, place: ParkingPlace): Promise<ReleasedStream[]> {
  const { rows } = await sql<ReleasedStream & { status: string; retry_requested_at: Date | null }>`
    select distinct on (topic, partition, stream_key) topic, partition, stream_key, status, retry_requested_at
    from ${sql.table(place.table)}
    where consumer = ${place.consumer} and status in ('parked', 'held')
    order by topic, partition, stream_key, "offset"`.execute(db);
  return rows
    .filter((head) => head.status === 'held' || head.retry_requested_at !== null)
    .map(({ topic, partition, stream_key }) => ({ topic, partition, stream_key }));
}

/** A stream's parked and held records, in log order. */
export function pendingRecords(db: Kysely<Database>, place: ParkingPlace, stream: ReleasedStream) {
  return db
    .selectFrom(parked(place))
    .select(['offset', 'stream_key', 'value'])
    .where('consumer', '=', place.consumer)
    .where('topic', '=', stream.topic)
    .where('partition', '=', stream.partition)
    .where((eb) =>
      stream.stream_key === null ? eb('stream_key', 'is', null) : eb('stream_key', '=', stream.stream_key),
    )
    .where('status', 'in', PENDING)
    .orderBy('offset')
    .execute();
}

/**
 * Commands decide against the read models; an account whose records wait in the projector's parked
 * table is not what the log says, so nothing is decided for it until an operator resolves them.
 */
export async function refuseHeldStream(db: Kysely<Database> | Transaction<Database>, streamKey: string) {
  const held = await db
    .selectFrom('projection_parked_records')
    .select('offset')
    .where('stream_key', '=', streamKey)
    .where('status', 'in', PENDING)
    .limit(1)
    .executeTakeFirst();
  if (held) {
    throw new DomainError(
      503,
      'account_held',
      'A record of this account could not be applied and is waiting for an operator; writes to it are paused.',
    );
  }
}

/** Parked and held records per consumer, for readiness details and metrics. */
export async function parkedCounts(db: Kysely<Database>) {
  const { rows } = await sql<{ consumer: string; status: string; count: string }>`
    select consumer, status, count(*)::text as count from projection_parked_records
      where status in ('parked', 'held') group by consumer, status
    union all
    select consumer, status, count(*)::text from public.parked_records
      where status in ('parked', 'held') group by consumer, status`.execute(db);
  const counts: Record<string, { parked: number; held: number }> = {};
  for (const row of rows) {
    const entry = (counts[row.consumer] ??= { parked: 0, held: 0 });
    entry[row.status as 'parked' | 'held'] = Number(row.count);
  }
  return counts;
}

/** One parked or held record, as operators see it. */
export interface ParkedRecordView {
  consumer: string;
  topic: string;
  partition: number;
  offset: string;
  stream_key: string | null;
  event_type: string | null;
  status: string;
  error: string | null;
  parked_at: Date;
  retry_requested_at: Date | null;
}

/** Every parked and held record of every consumer (with `all`, applied and skipped ones too). */
export async function listParked(db: Kysely<Database>, options: { all?: boolean } = {}) {
  const { rows } = await sql<ParkedRecordView>`
    select * from (
      select consumer, topic, partition, "offset", stream_key, event_type, status, error, parked_at, retry_requested_at
        from projection_parked_records
      union all
      select consumer, topic, partition, "offset", stream_key, event_type, status, error, parked_at, retry_requested_at
        from public.parked_records
    ) records
    where ${options.all ? sql`true` : sql`status in ('parked', 'held')`}
    order by consumer, topic, partition, "offset"`.execute(db);
  return rows;
}

export interface ParkedRecordAddress {
  consumer: string;
  topic: string;
  partition: number;
  offset: string;
}

const placeOf = (consumer: string): ParkingPlace => ({
  table: consumer === 'projector' ? 'projection_parked_records' : 'parked_records',
  consumer,
});

/**
 * Asks the consumer to apply a parked record again (after a fix), then the records held behind it,
 * in order. False when no such parked record exists.
 */
export async function requestRetry(db: Kysely<Database>, address: ParkedRecordAddress, now: Date) {
  const result = await db
    .updateTable(parked(placeOf(address.consumer)))
    .set({ retry_requested_at: now, updated_at: now })
    .where('consumer', '=', address.consumer)
    .where('topic', '=', address.topic)
    .where('partition', '=', address.partition)
    .where('offset', '=', address.offset)
    .where('status', '=', 'parked')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Never applies a parked record: the decision is kept outside any read-model schema, so a rebuild
 * skips it too; the records held behind it are then applied in order. False when no such parked
 * record exists.
 */
export async function skipParked(
  db: Kysely<Database>,
  address: ParkedRecordAddress,
  reason: string,
  now: Date,
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const result = await trx
      .updateTable(parked(placeOf(address.consumer)))
      .set({ status: 'skipped', retry_requested_at: null, updated_at: now })
      .where('consumer', '=', address.consumer)
      .where('topic', '=', address.topic)
      .where('partition', '=', address.partition)
      .where('offset', '=', address.offset)
      .where('status', '=', 'parked')
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) return false;
    await trx
      .insertInto('skipped_records')
      .values({
        consumer: address.consumer,
        topic: address.topic,
        partition: address.partition,
        offset: address.offset,
        reason: cleanText(reason),
        skipped_at: now,
      })
      .onConflict((oc) => oc.columns(['consumer', 'topic', 'partition', 'offset']).doNothing())
      .execute();
    return true;
  });
}
