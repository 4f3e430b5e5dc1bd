import { UnknownEventTypeError, type DomainEvent, type EventCodec } from '@leadline/events';
import type { Kafka } from 'kafkajs';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './db/schema';

export interface PositionedEvent {
  offset: string;
  /** Undefined for a record of a type this version does not know (written by a newer producer). */
  event: DomainEvent | undefined;
}

/** Tables of per-partition checkpoints, one per consumer that keeps its own (same shape). */
export type CheckpointTable = 'projection_checkpoints' | 'webhook_relay_checkpoints' | 'ai_agent_checkpoints';

async function decodeAll(codec: EventCodec, messages: { offset: string; value: Buffer | null }[]) {
  return Promise.all(
    messages.map(async ({ offset, value }): Promise<PositionedEvent> => {
      if (!value) return { offset, event: undefined };
      try {
        return { offset, event: await codec.decode(value) };
      } catch (error) {
        // A newer producer's event type: skip it and move on (tolerant reader). Anything else, such
        // as a record that does not match its schema, stops the consumer rather than lose data.
        if (error instanceof UnknownEventTypeError) return { offset, event: undefined };
        throw error;
      }
    }),
  );
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
  await trx
    .insertInto(table)
    .values({ topic, partition, next_offset: '0', updated_at: now })
    .onConflict((oc) => oc.columns(['topic', 'partition']).doNothing())
    .execute();
  const checkpoint = await trx
    .selectFrom(table)
    .select('next_offset')
    .where('topic', '=', topic)
    .where('partition', '=', partition)
    .forUpdate()
    .executeTakeFirstOrThrow();
  const from = BigInt(checkpoint.next_offset);
  return records.filter((record) => BigInt(record.offset) >= from);
}

/** Moves the partition's checkpoint past `lastOffset`, in the transaction that handled the records. */
export async function advanceCheckpoint(
  trx: Transaction<Database>,
  table: CheckpointTable,
  topic: string,
  partition: number,
  lastOffset: string,
  now: Date,
): Promise<string> {
  const nextOffset = (BigInt(lastOffset) + 1n).toString();
  await trx
    .updateTable(table)
    .set({ next_offset: nextOffset, updated_at: now })
    .where('topic', '=', topic)
    .where('partition', '=', partition)
    .execute();
  return nextOffset;
}

export interface LogConsumerDeps {
  kafka: Kafka;
  db: Kysely<Database>;
  codec: EventCodec;
  groupId: string;
  topics: string[];
  checkpoints: CheckpointTable;
  /** Handles one partition's decoded batch; it stores the checkpoint in its own transaction. */
  handleBatch(topic: string, partition: number, records: PositionedEvent[]): Promise<void>;
  /** Called when the consumer crashes; `willRestart` is false when kafkajs gives up on it. */
  onCrash?: (error: Error, willRestart: boolean) => void;
}

export interface RunningConsumer {
  stop(): Promise<void>;
}

/**
 * A consumer of the log whose progress lives in Postgres, committed with what it wrote, rather than
 * in Kafka: Kafka's committed offsets are only a hint, so on every assignment the consumer seeks to
 * its checkpoints. Used by the projector and by the webhook relay.
 */
export async function startLogConsumer(deps: LogConsumerDeps): Promise<RunningConsumer> {
  const { kafka, db, codec, groupId } = deps;
  const consumer = kafka.consumer({
    groupId,
    allowAutoTopicCreation: false,
    maxBytesPerPartition: 4 << 20,
    // A consumer that died is noticed after 10 s rather than Kafka's 30 s default; its partitions
    // move to a live instance that much sooner.
    sessionTimeout: 10_000,
    heartbeatInterval: 2_000,
  });
  await consumer.connect();
  await consumer.subscribe({ topics: deps.topics, fromBeginning: true });

  consumer.on(consumer.events.GROUP_JOIN, async ({ payload }) => {
    const checkpoints = await db.selectFrom(deps.checkpoints).selectAll().execute();
    for (const [topic, partitions] of Object.entries(payload.memberAssignment)) {
      for (const partition of partitions) {
        const checkpoint = checkpoints.find((row) => row.topic === topic && row.partition === partition);
        consumer.seek({ topic, partition, offset: checkpoint?.next_offset ?? '0' });
      }
    }
  });
  consumer.on(consumer.events.CRASH, ({ payload }) => deps.onCrash?.(payload.error, payload.restart));

  await consumer.run({
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
      if (!isRunning() || isStale() || batch.messages.length === 0) return;
      const records = await decodeAll(codec, batch.messages);
      await deps.handleBatch(batch.topic, batch.partition, records);
      resolveOffset(batch.lastOffset());
      await heartbeat();
    },
  });

  return {
    async stop() {
      await consumer.disconnect();
    },
  };
}
