import { UnknownEventTypeError, type EventCodec, type TopicNames } from '@leadline/events';
import type { Database } from '@leadline/runtime';
import type { Kysely } from 'kysely';
import type { Kafka } from 'kafkajs';
import { applyBatch, type PositionedEvent } from './apply-batch';
import type { Projection } from './projection';

export interface ProjectorDeps {
  kafka: Kafka;
  db: Kysely<Database>;
  codec: EventCodec;
  topics: TopicNames;
  groupId: string;
  projections: readonly Projection[];
  /** False for a rebuild into a side schema: it neither notifies commands nor takes the swap lock. */
  live?: boolean;
  /** Called when the consumer crashes; `willRestart` is false when kafkajs gives up on it. */
  onCrash?: (error: Error, willRestart: boolean) => void;
}

export interface RunningProjector {
  stop(): Promise<void>;
}

async function decodeAll(codec: EventCodec, messages: { offset: string; value: Buffer | null }[]) {
  return Promise.all(
    messages.map(async ({ offset, value }): Promise<PositionedEvent> => {
      if (!value) return { offset, event: undefined };
      try {
        return { offset, event: await codec.decode(value) };
      } catch (error) {
        // A newer producer's event type: skip it and move on (tolerant reader). Anything else, such
        // as a record that does not match its schema, stops the projector rather than lose data.
        if (error instanceof UnknownEventTypeError) return { offset, event: undefined };
        throw error;
      }
    }),
  );
}

/**
 * Consumes the whole log and keeps the read models current. Offsets that matter are the checkpoints
 * in Postgres (committed with the rows); Kafka's committed offsets are only a hint, so on every
 * assignment the consumer seeks to the checkpoints.
 */
export async function startProjector(deps: ProjectorDeps): Promise<RunningProjector> {
  const { kafka, db, codec, topics, groupId, projections } = deps;
  const consumer = kafka.consumer({
    groupId,
    allowAutoTopicCreation: false,
    maxBytesPerPartition: 4 << 20,
    // A projector that died is noticed after 10 s rather than Kafka's 30 s default; its partitions
    // move to a live instance that much sooner.
    sessionTimeout: 10_000,
    heartbeatInterval: 2_000,
  });
  await consumer.connect();
  await consumer.subscribe({ topics: Object.values(topics), fromBeginning: true });

  consumer.on(consumer.events.GROUP_JOIN, async ({ payload }) => {
    const assigned = Object.entries(payload.memberAssignment);
    const checkpoints = await db.selectFrom('projection_checkpoints').selectAll().execute();
    for (const [topic, partitions] of assigned) {
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
      await applyBatch(db, projections, batch.topic, batch.partition, records, { live: deps.live ?? true });
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
