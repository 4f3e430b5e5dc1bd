import type { EventCodec, TopicNames } from '@leadline/events';
import {
  startLogConsumer,
  type Database,
  type LogConsumerDeps,
  type PersonalDataKeys,
  type RunningConsumer,
} from '@leadline/runtime';
import type { Kysely } from 'kysely';
import type { Kafka } from 'kafkajs';
import { applyBatch } from './apply-batch';
import type { Projection } from './projection';

export interface ProjectorDeps {
  kafka: Kafka;
  db: Kysely<Database>;
  codec: EventCodec;
  topics: TopicNames;
  groupId: string;
  projections: readonly Projection[];
  /** An erasure finds the person's rows held under the phone in clear by its keyed hash. */
  personalDataKeys: PersonalDataKeys;
  /** False for a rebuild into a side schema: it neither notifies commands nor takes the swap lock. */
  live?: boolean;
  /** Called when the consumer crashes; `willRestart` is false when kafkajs gives up on it. */
  onCrash?: (error: Error, willRestart: boolean) => void;
  onParked?: LogConsumerDeps['onParked'];
  parkedPollMs?: number;
  /**
   * Partitions applied at once, each batch in its own transaction (a partition's batches stay in
   * order); 1 by default. Its database pool needs a connection per partition besides the parking poll.
   */
  concurrency?: number;
}

export type RunningProjector = RunningConsumer;

/** Consumes the whole log and keeps the read models current, checkpointed in the read models' schema. */
export function startProjector(deps: ProjectorDeps): Promise<RunningProjector> {
  return startLogConsumer({
    ...deps,
    topics: Object.values(deps.topics),
    checkpoints: 'projection_checkpoints',
    partitionsConsumedConcurrently: deps.concurrency ?? 1,
    handleBatch: async (topic, partition, records) => {
      await applyBatch(deps.db, deps.projections, topic, partition, records, {
        live: deps.live ?? true,
        context: { personalDataKeys: deps.personalDataKeys },
      });
    },
  });
}
