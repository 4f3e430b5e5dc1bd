import type { Kysely } from 'kysely';
import type { Database } from '../db/schema';
import type { CheckpointTable, PositionedEvent } from '../log-records';

/** How long a run of passed-over records may wait before the checkpoint is moved past it. */
export const PASS_OVER_FLUSH_MS = 1_000;

/** Records of one partition passed over since the checkpoint was last moved: `[from, next)`. */
interface Run {
  topic: string;
  partition: number;
  from: bigint;
  next: bigint;
  since: number;
}

/** Where a fetched batch continues from: the offset it was fetched at, or its first record's. */
const startOf = (records: readonly PositionedEvent[]) =>
  BigInt(records[0]!.fetchedFrom ?? records[0]!.offset);

/**
 * The batches a consumer passes over (nothing in them it acts on: the inbound decider and the AI agent
 * read every account event for a few types) move its checkpoint lazily. Each partition's run of such
 * records is remembered and written at most once a `flushMs`, or folded into the next batch the
 * consumer handles, which then counts as fetched from where the run began: its transaction moves the
 * checkpoint past both. Written at once, every such batch would cost a durable write for each consumer
 * passing it over.
 *
 * Nothing is skipped that was not passed over: the checkpoint moves past a run only if it has reached
 * the run's start (the condition `freshRecords` checks under its lock), and a run found behind it (a
 * restore put the checkpoint back) is read again from the checkpoint (`seekBack`). A run not yet written
 * when the process stops or the partition moves elsewhere is read again and passed over again.
 */
export function passedOverRuns(deps: {
  db: Kysely<Database>;
  table: CheckpointTable;
  flushMs?: number;
  /** The consumer continues this partition from its checkpoint, found behind a run. */
  seekBack: (topic: string, partition: number) => Promise<void>;
}) {
  const { db, table } = deps;
  const flushMs = deps.flushMs ?? PASS_OVER_FLUSH_MS;
  const runs = new Map<string, Run>();
  /** Runs being written, so a batch of the partition waits for its checkpoint to be where it says. */
  const writing = new Map<string, Promise<void>>();
  const keyOf = (topic: string, partition: number) => `${topic}:${partition}`;

  /** Moves the checkpoint past the run, or reads the partition again from a checkpoint behind it. */
  async function write(run: Run) {
    const { numUpdatedRows } = await db
      .updateTable(table)
      .set((eb) => ({
        next_offset: eb.fn<string>('greatest', [eb.ref('next_offset'), eb.val(run.next.toString())]),
        updated_at: new Date(),
      }))
      .where('topic', '=', run.topic)
      .where('partition', '=', run.partition)
      .where('next_offset', '>=', run.from.toString())
      .executeTakeFirst();
    if (numUpdatedRows === 0n) await deps.seekBack(run.topic, run.partition);
  }

  async function take(key: string) {
    const run = runs.get(key);
    if (!run) return;
    runs.delete(key);
    const written = write(run).finally(() => writing.delete(key));
    writing.set(key, written);
    await written;
  }

  return {
    /** A batch with nothing for the consumer: it extends its partition's run (written if due). */
    async add(topic: string, partition: number, records: readonly PositionedEvent[]) {
      const key = keyOf(topic, partition);
      const start = startOf(records);
      const next = BigInt(records.at(-1)!.offset) + 1n;
      const run = runs.get(key);
      if (run && start >= run.from && start <= run.next) {
        if (next > run.next) run.next = next;
      } else {
        // Not where the run ends (the consumer was sent elsewhere): the run stands on its own.
        if (run) await take(key);
        runs.set(key, { topic, partition, from: start, next, since: Date.now() });
      }
      if (Date.now() - runs.get(key)!.since >= flushMs) await take(key);
    },
    /** Waits for the partition's run being written, if one is (see `flush`). */
    async settled(topic: string, partition: number) {
      await writing.get(keyOf(topic, partition))?.catch(() => undefined);
    },
    /**
     * The batch as its handler should see it: fetched from the start of the run it continues, if any,
     * so the handler's transaction moves the checkpoint past the run as well.
     */
    continuing(topic: string, partition: number, records: PositionedEvent[]): PositionedEvent[] {
      const run = runs.get(keyOf(topic, partition));
      const start = startOf(records);
      if (!run || start < run.from || start > run.next) return records;
      return [{ ...records[0]!, fetchedFrom: run.from.toString() }, ...records.slice(1)];
    },
    /** The handler moved the checkpoint past the partition's run, or found it behind it: forget the run. */
    forget(topic: string, partition: number) {
      runs.delete(keyOf(topic, partition));
    },
    /** Partitions were assigned anew: each continues from its checkpoint, so runs not written are read again. */
    clear() {
      runs.clear();
    },
    /** Writes every run older than `flushMs` (every run, with `all`). */
    async flush(all = false) {
      const now = Date.now();
      for (const [key, run] of runs) {
        if (all || now - run.since >= flushMs) await take(key);
      }
    },
  };
}
