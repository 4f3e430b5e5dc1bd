import type { DomainEvent, EventCodec } from '@leadline/events';
import type { Admin, Kafka } from 'kafkajs';
import type { Kysely } from 'kysely';
import { CONSUMER_SESSION_TIMEOUT_MS } from './config';
import type { Database } from './db/schema';
import {
  checkpointsOn,
  drained,
  endLimits,
  generationToRead,
  limitKey,
  placeFreshConsumer,
  switchGeneration,
  type ConsumerLayout,
} from './generation-switch';
import {
  generationGroupId,
  logLayoutOf,
  readGenerations,
  topicsOfKinds,
  type LogGeneration,
} from './log-generations';
import { checkpointConsumers, type CheckpointTable, type PositionedEvent } from './log-records';
import { watchConsumerLag } from './metrics';
import { parkedTableOf, type ParkedRecordNotice } from './parking';
import { parkingHandler } from './log-consumer/parking-handler';
import { PASS_OVER_FLUSH_MS, passedOverRuns } from './log-consumer/pass-over';
import { CheckpointBehindError, decodeAll, LogGapError } from './log-consumer/records';

export {
  advanceCheckpoint,
  CheckpointBehindError,
  decodeRecord,
  freshRecords,
  LogGapError,
} from './log-consumer/records';
export { parkingHandler, type ParkingHandlerDeps } from './log-consumer/parking-handler';
export { passedOverRuns } from './log-consumer/pass-over';

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
  /** Called for each record parked (logged to stderr when not given). */
  onParked?: (notice: ParkedRecordNotice) => void;
  /** How often parked records released by an operator (retry, skip) are looked for; 1 s by default. */
  parkedPollMs?: number;
  /**
   * Partitions whose batches are handled at once (1 by default): for a consumer whose handling waits
   * on remote calls rather than on its own database work. Each partition's records stay in order.
   */
  partitionsConsumedConcurrently?: number;
  /**
   * The events the consumer acts on, for one that reads a topic mostly for others (the AI agent and
   * the inbound decider read every account event for a few types): a batch holding none of them and
   * nothing to park does not go through `handleBatch` (its transactions and the parking lookups, for
   * every batch the topic carries); the checkpoint moves past such batches within a second, or with
   * the next batch handled (see log-consumer/pass-over.ts).
   */
  actsOn?: (event: DomainEvent) => boolean;
  /**
   * A partition the checkpoint table has no row for starts where the consumer group's committed
   * offset says, when it has one, rather than at offset 0: for a consumer that kept its position in
   * Kafka before it kept it in Postgres, and whose effects are on the log rather than beside the
   * checkpoint (what Kafka says it handled was handled), so an upgrade continues where it stopped.
   */
  startAtGroupOffsets?: boolean;
  /**
   * For a consumer that acts on a few types of a busy topic (the SMS gateway on the account topic):
   * whether a record is worth decoding, from its `event-type` header. The rest are passed over as
   * records without an event, never decoded (decoding validates each record against its schema).
   */
  decodes?: (eventType: string | undefined) => boolean;
  /**
   * Whether the consumer reads the personal values of an event type (every type, by default): those
   * of a type it does not are left sealed, so it decrypts nothing it never reads (the sequencer
   * reads ids off the messages and enrollments it follows, not their phones and bodies).
   */
  opens?: (eventType: DomainEvent['type']) => boolean;
}

/**
 * Gives each partition without a checkpoint the group's committed offset (see `startAtGroupOffsets`).
 * Partitions that have one keep it, so instances starting together, or a later start, change nothing.
 */
async function checkpointsFromGroup(
  db: Kysely<Database>,
  admin: Admin,
  table: CheckpointTable,
  groupId: string,
  topics: string[],
) {
  const committed = await admin.fetchOffsets({ groupId, topics });
  const rows = committed.flatMap(({ topic, partitions }) =>
    partitions
      // -1: the group never committed an offset for the partition.
      .filter(({ offset }) => BigInt(offset) >= 0n)
      .map(({ partition, offset }) => ({ topic, partition, next_offset: offset, updated_at: new Date() })),
  );
  if (rows.length === 0) return;
  await db
    .insertInto(table)
    .values(rows)
    .onConflict((oc) => oc.columns(['topic', 'partition']).doNothing())
    .execute();
}

export interface RunningConsumer {
  stop(): Promise<void>;
}

/** How often a consumer tells its group it is alive: a third of its session timeout. */
const HEARTBEAT_INTERVAL_MS = CONSUMER_SESSION_TIMEOUT_MS / 3;

/**
 * Heartbeats while a batch is handled. kafkajs sends one only between batches, so a batch that waits
 * longer than the session timeout (a command waiting for the projector through a broker's failover,
 * a statement behind a lock) would cost its instance the group's membership and every partition a
 * rebalance. A heartbeat that fails (the group is rebalancing) is left to the one after the batch,
 * which kafkajs acts on.
 */
async function keepingAlive<T>(heartbeat: () => Promise<void>, handling: Promise<T>): Promise<T> {
  const timer = setInterval(() => heartbeat().catch(() => undefined), HEARTBEAT_INTERVAL_MS);
  try {
    return await handling;
  } finally {
    clearInterval(timer);
  }
}

/**
 * A consumer of the log whose progress lives in Postgres, committed with what it wrote, rather than
 * in Kafka: Kafka's committed offsets are only a hint, so on every assignment the consumer seeks to
 * its checkpoints. Used by the projector, the webhook relay, the AI agent, the inbound decider, the
 * sequencer and the SMS gateway.
 *
 * It follows the log's topic generations (see log-generations.ts): it reads the generation it holds
 * positions on, and once that generation has stopped taking writes and every partition of it is
 * applied up to its end (by whichever instances of the consumer hold them), it moves onto the next
 * one, where live writes began (see generation-switch.ts), in a consumer group of that generation.
 * Topics that are not the log's are read as they are.
 */
export async function startLogConsumer(deps: LogConsumerDeps): Promise<RunningConsumer> {
  const layout = logLayoutOf(deps.topics);
  if (!layout) {
    return consumeTopics(deps, {
      topics: deps.topics,
      groupId: deps.groupId,
      startAtGroupOffsets: deps.startAtGroupOffsets ?? false,
    });
  }
  return followGenerations(deps, layout);
}

/** How often a consumer looks at the generations: often while a migration is under way. */
const FOLLOW_MS = 2_000;
const FOLLOW_MIGRATING_MS = 200;

async function followGenerations(deps: LogConsumerDeps, layout: ConsumerLayout): Promise<RunningConsumer> {
  const { db } = deps;
  const table = deps.checkpoints;
  const topicsOf = (generation: LogGeneration) =>
    topicsOfKinds(layout.prefix, generation.generation, layout.kinds);
  const startingGenerations = await readGenerations(db);
  let { generation, fresh } = await generationToRead(db, table, layout, startingGenerations);
  if (deps.startAtGroupOffsets) {
    // A consumer that kept its place in Kafka before Postgres continues from its group's offsets on
    // the oldest generation it may still read (on upgrade, generation 1 and its original group).
    const from = fresh
      ? startingGenerations.find(
          (candidate) => candidate.state === 'draining' || candidate.state === 'active',
        )!
      : generation;
    const admin = deps.kafka.admin();
    await admin.connect();
    try {
      await checkpointsFromGroup(
        db,
        admin,
        table,
        generationGroupId(deps.groupId, from.generation),
        topicsOf(from),
      );
    } finally {
      await admin.disconnect();
    }
    ({ generation, fresh } = await generationToRead(db, table, layout, startingGenerations));
  }
  if (fresh) await placeFreshConsumer(db, table, layout, startingGenerations, generation, new Date());
  /** The end of the generation being read, once it has stopped taking writes: nothing past it is applied. */
  let limits = new Map<string, bigint>();
  let inner: RunningConsumer | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let checking: Promise<void> | undefined;

  /** Moves past every generation the consumer has drained; true if it moved. */
  async function advance(generations: readonly LogGeneration[]): Promise<boolean> {
    let moved = false;
    for (;;) {
      const current = generations.find((candidate) => candidate.generation === generation.generation)!;
      generation = current;
      if (current.state !== 'draining' && current.state !== 'retired') return moved;
      limits = endLimits(current, layout);
      const checkpoints = await checkpointsOn(db, table, topicsOf(current));
      if (!drained(current, layout, checkpoints)) {
        if (current.state === 'retired') {
          throw new LogGapError(
            `${deps.groupId}: its position is on generation ${current.generation} of the log, which was retired before it read it to its end`,
          );
        }
        return moved;
      }
      const next = generations.find((candidate) => candidate.generation === current.generation + 1);
      if (!next?.startOffsets) return moved;
      await inner?.stop();
      inner = undefined;
      await switchGeneration(db, table, layout, current, next, new Date());
      console.warn(
        `${deps.groupId}: read generation ${current.generation} of the log to its end; continuing on generation ${next.generation}`,
      );
      generation = next;
      limits = new Map();
      moved = true;
    }
  }

  const startInner = () =>
    consumeTopics(deps, {
      topics: topicsOf(generation),
      groupId: generationGroupId(deps.groupId, generation.generation),
      startAtGroupOffsets: false,
      limitOf: (topic, partition) => limits.get(limitKey(topic, partition)),
    });

  async function check() {
    const generations = await readGenerations(db);
    if (await advance(generations)) inner = await startInner();
    const migrating = generations.some((candidate) => candidate.state === 'migrating');
    return migrating || generation.state !== 'active' ? FOLLOW_MIGRATING_MS : FOLLOW_MS;
  }

  const schedule = (ms: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      checking = check().then(schedule, (error: unknown) => {
        if (error instanceof LogGapError) {
          console.error(error.message);
          deps.onCrash?.(error, false);
          return;
        }
        console.warn(`${deps.groupId}: following the log's generations: ${(error as Error).message}`);
        schedule(FOLLOW_MS);
      });
    }, ms);
  };

  await advance(startingGenerations);
  inner = await startInner();
  schedule(FOLLOW_MIGRATING_MS);

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await checking?.catch(() => undefined);
      await inner?.stop();
    },
  };
}

/** The codec as a consumer reads with it: the personal values it does not read are left sealed. */
function readerOf({ codec, opens }: Pick<LogConsumerDeps, 'codec' | 'opens'>): EventCodec {
  if (!opens) return codec;
  return { encode: (event) => codec.encode(event), decode: (record) => codec.decode(record, { opens }) };
}

/** One generation's (or a plain list of) topics, read by one consumer group. */
async function consumeTopics(
  deps: LogConsumerDeps,
  options: {
    topics: string[];
    groupId: string;
    startAtGroupOffsets: boolean;
    /** The offset from which records of a partition are not applied (the generation's end). */
    limitOf?: (topic: string, partition: number) => bigint | undefined;
  },
): Promise<RunningConsumer> {
  const { kafka, db } = deps;
  const codec = readerOf(deps);
  const { groupId, topics } = options;
  // For the group's committed offsets (at start) and the partitions' ends (lag, at scrape time).
  const admin = kafka.admin();
  await admin.connect();
  if (options.startAtGroupOffsets) await checkpointsFromGroup(db, admin, deps.checkpoints, groupId, topics);
  const consumer = kafka.consumer({
    groupId,
    allowAutoTopicCreation: false,
    maxBytesPerPartition: 4 << 20,
    sessionTimeout: CONSUMER_SESSION_TIMEOUT_MS,
    heartbeatInterval: HEARTBEAT_INTERVAL_MS,
  });
  await consumer.connect();
  await consumer.subscribe({ topics, fromBeginning: true });

  // Where each assigned partition must continue: the Postgres checkpoint, not Kafka's committed offset
  // (only a hint, and ahead of Postgres after a restore or a failover) nor the consumer's own position.
  // kafkajs does not wait for event listeners, so the seek on assignment may land after the first
  // fetch; what makes skipping impossible is that every batch is checked against the checkpoint, read
  // under its lock in the transaction that applies the batch (`freshRecords`), and a batch that starts
  // past it is applied not at all: the consumer seeks back to the checkpoint.
  const seekedTo = new Map<string, bigint>();
  const keyOf = (topic: string, partition: number) => `${topic}:${partition}`;
  const checkpointOf = async (topic: string, partition: number) => {
    const row = await db
      .selectFrom(deps.checkpoints)
      .select('next_offset')
      .where('topic', '=', topic)
      .where('partition', '=', partition)
      .executeTakeFirst();
    return BigInt(row?.next_offset ?? '0');
  };
  /** Continues the partition from its checkpoint (on assignment, and when a batch ran ahead of it). */
  const seekToCheckpoint = async (topic: string, partition: number) => {
    const offset = (await checkpointOf(topic, partition)).toString();
    try {
      consumer.seek({ topic, partition, offset });
    } catch {
      // Stopped meanwhile: whoever is assigned the partition next starts from its checkpoint anyway.
    }
  };
  const passedOver = passedOverRuns({ db, table: deps.checkpoints, seekBack: seekToCheckpoint });
  consumer.on(consumer.events.GROUP_JOIN, async ({ payload }) => {
    seekedTo.clear();
    passedOver.clear();
    for (const [topic, partitions] of Object.entries(payload.memberAssignment)) {
      for (const partition of partitions) await seekToCheckpoint(topic, partition);
    }
  });
  consumer.on(consumer.events.CRASH, ({ payload }) => deps.onCrash?.(payload.error, payload.restart));

  const parking = parkingHandler({
    db,
    codec,
    place: parkedTableOf(deps.checkpoints),
    label: groupId,
    handleBatch: deps.handleBatch,
    onParked: deps.onParked,
    pollMs: deps.parkedPollMs,
  });
  const { handle, reportDecodeFailures } = parking;

  await consumer.run({
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: deps.partitionsConsumedConcurrently ?? 1,
    eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
      if (!isRunning() || isStale() || batch.messages.length === 0) return;
      const key = keyOf(batch.topic, batch.partition);
      const limit = options.limitOf?.(batch.topic, batch.partition);
      // Past a generation's end there is nothing to apply: appends are refused there from its cutover on.
      const messages =
        limit === undefined ? batch.messages : batch.messages.filter(({ offset }) => BigInt(offset) < limit);
      if (messages.length === 0) {
        resolveOffset(batch.lastOffset());
        await heartbeat();
        return;
      }
      const records = await decodeAll(codec, messages, deps.decodes);
      // kafkajs keeps the offset a batch was fetched from (not in its typings).
      const fetchedFrom = (batch as typeof batch & { fetchedOffset?: string }).fetchedOffset;
      if (fetchedFrom !== undefined && records[0]) records[0] = { ...records[0], fetchedFrom };
      const actsOn = deps.actsOn;
      if (actsOn && records.every((record) => !record.failure && !(record.event && actsOn(record.event)))) {
        await passedOver.add(batch.topic, batch.partition, records);
        seekedTo.delete(key);
        resolveOffset(batch.lastOffset());
        await heartbeat();
        return;
      }
      await passedOver.settled(batch.topic, batch.partition);
      try {
        await keepingAlive(
          heartbeat,
          handle(batch.topic, batch.partition, passedOver.continuing(batch.topic, batch.partition, records)),
        );
        passedOver.forget(batch.topic, batch.partition);
      } catch (error) {
        if (!(error instanceof CheckpointBehindError)) throw error;
        passedOver.forget(batch.topic, batch.partition);
        const from = error.checkpoint;
        // Seek back once; if the log itself no longer holds those records (deleted, or a different
        // topic behind the same name), stop with a clear error rather than skip them silently.
        if (seekedTo.get(key) === from) {
          throw new LogGapError(
            `${groupId}: ${batch.topic}[${batch.partition}] continues at offset ${error.firstOffset} but offsets ${from} to ${error.firstOffset - 1n} were never applied and are no longer in the log`,
          );
        }
        seekedTo.set(key, from);
        consumer.seek({ topic: batch.topic, partition: batch.partition, offset: from.toString() });
        return;
      }
      // Reported once the records are parked, not for a batch that was refused.
      reportDecodeFailures(batch.topic, batch.partition, records);
      seekedTo.delete(key);
      resolveOffset(batch.lastOffset());
      await heartbeat();
    },
  });

  const releasing = parking.startReleasing();
  // Runs passed over are written once due even when no batch follows them (a quiet partition).
  const flushing = setInterval(
    () => void passedOver.flush().catch((error) => console.warn(`${groupId}: ${(error as Error).message}`)),
    PASS_OVER_FLUSH_MS / 2,
  );

  // Lag is read at scrape time: the partitions' ends from the broker, the checkpoints from Postgres.
  const unwatchLag = watchConsumerLag({
    db,
    admin,
    topics,
    consumer: checkpointConsumers[deps.checkpoints],
    checkpoints: deps.checkpoints,
  });

  return {
    async stop() {
      unwatchLag();
      releasing.stop();
      clearInterval(flushing);
      await consumer.disconnect();
      // What was passed over is not read again by the next consumer of these partitions.
      await passedOver.flush(true).catch(() => undefined);
      await admin.disconnect();
    },
  };
}
