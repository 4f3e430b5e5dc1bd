import { sql, type Kysely, type Transaction } from 'kysely';
import type pg from 'pg';
import type { Database } from './db/schema';
import { createKeyedBatcher } from './keyed-batcher';
import type { AppendPosition } from './log-writer';

/**
 * Where each stream's appends went, so that a command can decide without asking Kafka for its
 * partition's end (README, "A write that waits once"). Every append of a stream first commits an
 * intent (`stream_appends`), then is sent; once acknowledged, one statement deletes the intent and moves
 * the stream's position (`stream_positions`) to it. A command that finds no intent of its stream under
 * its locks knows that every event of the stream on the log is at or before that position; one that
 * finds an intent (an append in flight, or one whose writer died or timed out) asks Kafka, as before.
 *
 * The tables are unlogged, so an intent costs no WAL flush. Crash recovery empties them, and with
 * them `stream_positions_kept`: the first command after it puts that row back with the time, and from
 * then on a position counts only once an append of its stream sent `STALE_APPEND_MS` after that time
 * was recorded (every append whose intent the crash lost has landed by then, at an earlier offset).
 * The previous version's writers, which append without intents, are covered the same way: the
 * migration that made these tables set that time `STALE_APPEND_MS` ahead, by when they must be gone.
 */

/**
 * How long an intent stands before a command of its stream deletes it: by then its append has landed
 * or never will. A producer keeps retrying a request its command gave up on (8 retries, each bounded
 * by kafkajs's 30 s request timeout, with backoff between them), then is disconnected; a crashed
 * writer's request ends with its process. Until then each command of the stream asks Kafka, as every
 * command did before positions were kept.
 */
export const STALE_APPEND_MS = 10 * 60_000;

export interface StreamAppend {
  appendId: string;
  streamKey: string;
}

/**
 * Commits intents before their appends are sent: those asked for while a statement is in flight go
 * together in the next one. `pool` must not be the pool whose connection the caller holds (a command's
 * transaction): with every connection of a pool held by commands each waiting for a second one, none
 * would come free.
 */
export function createAppendIntents(pool: pg.Pool): (append: StreamAppend) => Promise<void> {
  return createKeyedBatcher<StreamAppend, void>({
    keyOf: () => 'intents',
    conflicts: () => false,
    maxBatch: 1000,
    run: async (_key, appends) => {
      // Prepared once per connection (the statement's name).
      await pool.query({
        name: 'open-stream-appends',
        text: `insert into stream_appends (append_id, stream_key)
               select intent.append_id, intent.stream_key
               from unnest($1::uuid[], $2::text[]) as intent (append_id, stream_key)`,
        values: [appends.map((append) => append.appendId), appends.map((append) => append.streamKey)],
      });
      return appends.map(() => undefined);
    },
  });
}

/**
 * Records acknowledged appends: deletes their intents, and the intents of their streams that started
 * `STALE_APPEND_MS` before theirs (whose appends, if they ever landed, landed before these were sent,
 * so at earlier offsets), and moves each stream's position forward to its furthest append (to it
 * outright when the stream's position was on another topic: the log moved to a new generation), with
 * the latest time one of its recorded appends was sent (its intent's). Rows are taken in the streams'
 * order, so two writers recording the same streams do not deadlock.
 */
export async function recordAppends(
  db: Kysely<Database> | Transaction<Database>,
  appends: readonly (StreamAppend & { position: AppendPosition })[],
): Promise<void> {
  if (appends.length === 0) return;
  // The statement is `record_stream_appends` (migration 0022), planned once per connection.
  await sql`select record_stream_appends(
    ${appends.map((append) => append.appendId)}::uuid[],
    ${appends.map((append) => append.streamKey)}::text[],
    ${appends.map((append) => append.position.topic)}::text[],
    ${appends.map((append) => append.position.partition)}::integer[],
    ${appends.map((append) => append.position.nextOffset.toString())}::bigint[],
    ${STALE_APPEND_MS}::integer)`.execute(db);
}
