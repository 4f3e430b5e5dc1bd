import { createRequire } from 'node:module';
import kafkajs, { Kafka, logLevel, Partitioners, type Admin, type Producer } from 'kafkajs';
import { topicPartitions, type TopicKind, type TopicNames } from '@leadline/events';
import { EVENT_PRODUCER_DURABILITY, type LogDurability } from './log-durability';

/**
 * kafkajs 2.2.4, its last release, re-arms a timer on every broker connection each time it checks for
 * queued requests, even when none is queued and nothing is throttled: the delay it computes is then
 * negative, Node runs it after 1 ms, and the check re-arms again, a thousand wake-ups a second per
 * connection for the life of the process (tulios/kafkajs#1556, #1704; Node 24 warns of the negative
 * delay, #1751). Nothing needs that timer: a request that cannot go at once is queued by `push`, which
 * arms the check itself, and every answer checks the queue again. So with nothing queued and no
 * throttle the check is not re-armed; otherwise kafkajs's own scheduling runs unchanged.
 */
function stopIdleRequestQueueTimers() {
  interface RequestQueue {
    pending: unknown[];
    throttledUntil: number;
    scheduleCheckPendingRequests(this: RequestQueue): void;
  }
  const { prototype } = createRequire(import.meta.url)('kafkajs/src/network/requestQueue/index.js') as {
    prototype: RequestQueue;
  };
  const schedule = prototype.scheduleCheckPendingRequests;
  prototype.scheduleCheckPendingRequests = function (this: RequestQueue) {
    if (this.pending.length === 0 && this.throttledUntil <= Date.now()) return;
    schedule.call(this);
  };
}
stopIdleRequestQueueTimers();

/** Topics deleted on purpose (see `forgetTopics`). */
const forgottenTopics = new Set<string>();

/**
 * kafkajs asks the broker, on every metadata refresh of a client, about every topic that client has
 * used, and a topic deleted since fails the whole refresh (UNKNOWN_TOPIC_OR_PARTITION, retried for
 * seconds, then thrown; only the admin that deletes a topic forgets it). Once `migrate-log --retire`
 * deletes an old generation's topics, every long-running producer, admin and consumer that wrote to or
 * looked at them would fail its next refresh, and with it every send and lookup, until restarted. So
 * no client asks about a topic the process was told is gone (`forgetTopics`), and a refresh refused
 * for an unknown topic all the same (before the process heard) is tried again once without the
 * topics the broker no longer has.
 */
function forgetDeletedTopics() {
  interface Metadata {
    topicMetadata: { topic: string }[];
  }
  interface Cluster {
    targetTopics: Set<string>;
    brokerPool: {
      withBroker<T>(
        call: (pool: { broker: { metadata(topics: string[]): Promise<T> } }) => Promise<T>,
      ): Promise<T>;
    };
  }
  type Refresh = (this: Cluster) => Promise<void>;
  const { prototype } = createRequire(import.meta.url)('kafkajs/src/cluster/index.js') as {
    prototype: Record<'refreshMetadata' | 'refreshMetadataIfNecessary', Refresh>;
  };
  for (const name of ['refreshMetadata', 'refreshMetadataIfNecessary'] as const) {
    const refresh = prototype[name];
    prototype[name] = async function (this: Cluster) {
      for (const topic of forgottenTopics) this.targetTopics.delete(topic);
      try {
        return await refresh.call(this);
      } catch (error) {
        if ((error as { type?: string }).type !== 'UNKNOWN_TOPIC_OR_PARTITION') throw error;
        // Every topic the cluster has (an empty list asks for all of them).
        const { topicMetadata } = await this.brokerPool.withBroker<Metadata>(({ broker }) =>
          broker.metadata([]),
        );
        const existing = new Set(topicMetadata.map((metadata) => metadata.topic));
        const deleted = [...this.targetTopics].filter((topic) => !existing.has(topic));
        if (deleted.length === 0) throw error;
        for (const topic of deleted) this.targetTopics.delete(topic);
        return refresh.call(this);
      }
    };
  }
}
forgetDeletedTopics();

/** Tells every Kafka client of the process that these topics are deleted: none asks about them again. */
export function forgetTopics(topics: Iterable<string>): void {
  for (const topic of topics) forgottenTopics.add(topic);
}

export function createKafka(brokers: string[], clientId: string): Kafka {
  return new Kafka({
    clientId,
    brokers,
    logLevel: logLevel.WARN,
    retry: { initialRetryTime: 100, retries: 8 },
  });
}

/** Where one partition of a topic ends: the offset its next record will take. */
export interface PartitionEnd {
  partition: number;
  high: string;
}

export interface LogEnds {
  /** The end of every partition of `topic`, as its leader says now. */
  of(topic: string): Promise<PartitionEnd[]>;
  disconnect(): Promise<void>;
}

/** How long a log-end reader trusts its metadata (the leaders, the partition counts) when nothing fails. */
const LOG_ENDS_METADATA_MAX_AGE_MS = 5_000;

/** Errors that say the metadata named a leader that is not (or no longer) one: refresh, ask again. */
const STALE_LEADER_ERRORS = new Set([
  'NOT_LEADER_FOR_PARTITION',
  'LEADER_NOT_AVAILABLE',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'FENCED_LEADER_EPOCH',
  'UNKNOWN_LEADER_EPOCH',
]);
const STALE_LEADER_ERROR_NAMES = new Set([
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSBrokerNotFound',
]);

/**
 * Reads the partitions' ends (high watermarks) in one round trip: one ListOffsets request to each
 * leader, for the latest offsets only. kafkajs's `admin.fetchTopicOffsets` takes three in sequence for
 * the same answer: kafkajs builds an admin's cluster without a `metadataMaxAge`, so its metadata is
 * never fresh and every lookup asks for it first; then it asks for the latest offsets, then for the
 * earliest, which no caller here reads. This reader builds its cluster as `kafka.admin()` does (the
 * client's brokers, retry, logger and sockets), with metadata kept a few seconds (a topic of the log
 * never changes its partition count: the log grows partitions by moving to a new generation of
 * topics), and refreshes it when a leader has moved (its errors above), asking once more.
 */
export function createLogEnds(kafka: Kafka): LogEnds {
  interface OffsetsCluster {
    connect(): Promise<void>;
    disconnect(): Promise<void>;
    addTargetTopic(topic: string): Promise<void>;
    refreshMetadata(): Promise<void>;
    refreshMetadataIfNecessary(): Promise<void>;
    findTopicPartitionMetadata(topic: string): { partitionId: number }[];
    fetchTopicsOffset(
      topics: { topic: string; fromBeginning: boolean; partitions: { partition: number }[] }[],
    ): Promise<{ topic: string; partitions: { partition: number; offset: string }[] }[]>;
  }
  type CreateCluster = (options: {
    metadataMaxAge: number;
    allowAutoTopicCreation: boolean;
  }) => OffsetsCluster;
  const symbol = Object.getOwnPropertySymbols(kafka).find(
    (candidate) => candidate.description === 'private:Kafka:createCluster',
  );
  if (!symbol) throw new Error('kafkajs changed: its client no longer builds clusters as 2.2.4 does');
  const createCluster = (kafka as unknown as Record<symbol, CreateCluster>)[symbol]!;
  const cluster = createCluster({
    metadataMaxAge: LOG_ENDS_METADATA_MAX_AGE_MS,
    allowAutoTopicCreation: false,
  });
  let connecting: Promise<void> | undefined;

  const ask = async (topic: string): Promise<PartitionEnd[]> => {
    await cluster.addTargetTopic(topic);
    await cluster.refreshMetadataIfNecessary();
    const partitions = cluster
      .findTopicPartitionMetadata(topic)
      .map(({ partitionId }) => ({ partition: partitionId }));
    const [answer] = await cluster.fetchTopicsOffset([{ topic, fromBeginning: false, partitions }]);
    return answer!.partitions.map(({ partition, offset }) => ({ partition, high: offset }));
  };
  return {
    async of(topic) {
      connecting ??= cluster.connect().catch((error: unknown) => {
        connecting = undefined;
        throw error;
      });
      await connecting;
      try {
        return await ask(topic);
      } catch (error) {
        const { type, name } = error as { type?: string; name?: string };
        if (!STALE_LEADER_ERRORS.has(type ?? '') && !STALE_LEADER_ERROR_NAMES.has(name ?? '')) throw error;
        await cluster.refreshMetadata();
        return ask(topic);
      }
    },
    disconnect: () => cluster.disconnect(),
  };
}

/**
 * Idempotent, acks=all: a retried send is never written twice, and an acknowledged event survives a
 * broker failure. kafkajs requires one request in flight for idempotence.
 */
export function createEventProducer(kafka: Kafka): Producer {
  return kafka.producer({
    idempotent: EVENT_PRODUCER_DURABILITY.idempotent,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
}

// kafkajs is CommonJS: Node's ESM loader finds only its first few named exports, these among the rest.
const { CompressionTypes, ConfigResourceTypes, ConfigSource } = kafkajs;

/**
 * The largest record batch a topic of the log accepts (its `max.message.bytes`), compressed. Kafka's
 * default (1 MB) refuses a bulk import of 1,000 ordinary leads; this fits the events of the largest
 * request the API accepts even if they did not compress at all. Sealing personal data makes them about
 * half again as large (base64 ciphertext, an IV and a tag per value): the largest bulk import's events
 * are 34 MB.
 */
export const LOG_MAX_MESSAGE_BYTES = 48 * 1024 * 1024;

/**
 * The most one command may append, measured encoded and before compression. Compression only shrinks
 * a batch, so anything under this fits `LOG_MAX_MESSAGE_BYTES` with room for the batch's own framing;
 * a command over it is refused (413 `event_batch_too_large`) before anything is written.
 */
export const APPEND_MAX_BYTES = 46 * 1024 * 1024;

/**
 * Appends of this many bytes (encoded, before compression) and more are compressed: events are JSON,
 * so a bulk import's batch shrinks several times. Below it, the few events of one or a few commands
 * would shrink by a few hundred bytes, for CPU paid on every append and again on every consumer's read
 * (gzip was a twentieth of the API's CPU creating accounts); those go as they are.
 */
export const LOG_COMPRESSION_MIN_BYTES = 16 * 1024;

/** The codec of an append of `bytes`: GZIP (built into kafkajs; the others need native plugins) or none. */
export const logCompression = (bytes: number) =>
  bytes >= LOG_COMPRESSION_MIN_BYTES ? CompressionTypes.GZIP : CompressionTypes.None;

const topicConfig = {
  'retention.ms': '-1',
  'max.message.bytes': String(LOG_MAX_MESSAGE_BYTES),
} as const;

/**
 * Creates the log's topics if missing (broker auto-creation is off): retention is infinite and record
 * batches up to `LOG_MAX_MESSAGE_BYTES` are accepted. A topic created by an earlier version, with a
 * smaller limit, is raised to it (its other settings kept). `createMissing: false` (a generation made by
 * `migrate-log`, whose topics hold copied history) refuses to start on topics that are gone rather than
 * create empty ones.
 */
export async function ensureTopics(
  admin: Admin,
  topics: TopicNames,
  options: {
    partitions?: Readonly<Record<TopicKind, number>>;
    createMissing?: boolean;
    /** Copies of each partition and `min.insync.replicas` of the topics it creates; 1 and 1 by default. */
    durability?: LogDurability;
  } = {},
): Promise<void> {
  const durability = options.durability ?? { replicationFactor: 1, minInsyncReplicas: 1 };
  const partitions = options.partitions ?? topicPartitions;
  const existing = new Set(await admin.listTopics());
  const kinds = Object.keys(topics) as (keyof TopicNames)[];
  const missing = kinds.filter((kind) => !existing.has(topics[kind]));
  if (missing.length > 0 && options.createMissing === false) {
    throw new Error(
      `The log's topics ${missing.map((kind) => topics[kind]).join(', ')} are missing from the cluster`,
    );
  }
  if (missing.length > 0) {
    await admin.createTopics({
      // Waited for below: kafkajs's own wait fails on a cluster (see waitForLeaders).
      waitForLeaders: false,
      topics: missing.map((kind) => ({
        topic: topics[kind],
        numPartitions: partitions[kind],
        replicationFactor: durability.replicationFactor,
        configEntries: Object.entries({
          ...topicConfig,
          'min.insync.replicas': String(durability.minInsyncReplicas),
        }).map(([name, value]) => ({ name, value })),
      })),
    });
  }
  if (missing.length > 0)
    await waitForLeaders(
      admin,
      missing.map((kind) => topics[kind]),
    );
  const present = kinds.filter((kind) => existing.has(topics[kind])).map((kind) => topics[kind]);
  if (present.length > 0) await raiseMessageLimit(admin, present);
}

/**
 * Waits until every broker of the cluster knows the topics just created and a leader for each of their
 * partitions. On a cluster of several nodes a broker learns of a new topic from the controller a moment
 * after the creation is acknowledged, and until then answers UNKNOWN_TOPIC_OR_PARTITION to any
 * metadata request naming it; kafkajs's own wait (`createTopics`' `waitForLeaders`) asks one broker
 * and gives up at that answer, and the next call (the start-up's durability check, a producer's first
 * send) may ask another that has not heard yet: the service that created the log on a fresh cluster
 * failed to start. So each broker is asked through a client of its own, again until it knows, within
 * `timeoutMs`.
 */
export async function waitForLeaders(admin: Admin, topics: string[], timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const { brokers } = await admin.describeCluster();
  await Promise.all(
    brokers.map(async ({ host, port }) => {
      const broker = `${host}:${port}`;
      // A client whose only connection is to this broker: its metadata requests go there.
      const one = new Kafka({
        clientId: 'leadline-topic-setup',
        brokers: [broker],
        logLevel: logLevel.NOTHING,
        retry: { retries: 0 },
      }).admin();
      try {
        await one.connect();
        for (;;) {
          let problem: string;
          try {
            const { topics: metadata } = await one.fetchTopicMetadata({ topics });
            const leaderless = metadata.flatMap((topic) =>
              topic.partitions
                .filter((partition) => partition.leader < 0)
                .map((partition) => `${topic.name}/${partition.partitionId}`),
            );
            if (metadata.length === topics.length && leaderless.length === 0) return;
            problem = `partitions without a leader: ${leaderless.join(', ') || 'topics missing'}`;
          } catch (error) {
            // Not known there yet (kafkajs answers so with UNKNOWN_TOPIC_OR_PARTITION or no metadata).
            problem = (error as Error).message;
          }
          if (Date.now() > deadline)
            throw new Error(
              `Broker ${broker} does not know the topics ${topics.join(', ')} with their leaders after ${timeoutMs} ms (${problem})`,
            );
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      } finally {
        await one.disconnect().catch(() => undefined);
      }
    }),
  );
}

/** Every topic's `max.message.bytes`, as the broker has it. */
export async function messageLimits(admin: Admin, topics: string[]): Promise<Map<string, string>> {
  const { resources } = await admin.describeConfigs({
    includeSynonyms: false,
    resources: topics.map((name) => ({ type: ConfigResourceTypes.TOPIC, name })),
  });
  return new Map(
    resources.map((resource) => [
      resource.resourceName,
      resource.configEntries.find((config) => config.configName === 'max.message.bytes')?.configValue ?? '0',
    ]),
  );
}

/** Sets the topics' `max.message.bytes`, keeping every other setting made on them. */
async function setMessageLimits(admin: Admin, limits: ReadonlyMap<string, string>): Promise<void> {
  if (limits.size === 0) return;
  const { resources } = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [...limits.keys()].map((name) => ({ type: ConfigResourceTypes.TOPIC, name })),
  });
  // AlterConfigs replaces a topic's whole configuration: the settings made on the topic are sent back.
  await admin.alterConfigs({
    validateOnly: false,
    resources: resources.map((resource) => {
      const kept = resource.configEntries.filter(
        (config) =>
          config.configSource === ConfigSource.TOPIC_CONFIG && config.configName !== 'max.message.bytes',
      );
      return {
        type: ConfigResourceTypes.TOPIC,
        name: resource.resourceName,
        configEntries: [
          ...kept.map((config) => ({ name: config.configName, value: config.configValue })),
          { name: 'max.message.bytes', value: limits.get(resource.resourceName)! },
        ],
      };
    }),
  });
}

/**
 * The value of `max.message.bytes` that makes a topic read-only: every record batch is larger, so
 * the broker refuses every produce request (not retriable), while reads go on. A migration sets it on
 * the old generation for its cutover, so an append abandoned by its caller earlier cannot land after
 * the old generation's end has been read.
 */
export const READ_ONLY_MESSAGE_BYTES = '0';

async function raiseMessageLimit(admin: Admin, topics: string[]): Promise<void> {
  const limits = await messageLimits(admin, topics);
  const tooSmall = new Map(
    [...limits]
      // A topic made read-only by a migration's cutover stays so (see READ_ONLY_MESSAGE_BYTES).
      .filter(([, limit]) => limit !== READ_ONLY_MESSAGE_BYTES && Number(limit) < LOG_MAX_MESSAGE_BYTES)
      .map(([topic]) => [topic, String(LOG_MAX_MESSAGE_BYTES)]),
  );
  await setMessageLimits(admin, tooSmall);
}

/** Makes the topics read-only (see READ_ONLY_MESSAGE_BYTES); read their limits first to give them back. */
export async function makeTopicsReadOnly(admin: Admin, topics: string[]): Promise<void> {
  await setMessageLimits(admin, new Map(topics.map((topic) => [topic, READ_ONLY_MESSAGE_BYTES])));
}

/** Gives topics made read-only their limits back (at least what the log needs). */
export async function restoreMessageLimits(admin: Admin, limits: ReadonlyMap<string, string>) {
  await setMessageLimits(
    admin,
    new Map(
      [...limits].map(([topic, limit]) => [
        topic,
        limit === READ_ONLY_MESSAGE_BYTES ? String(LOG_MAX_MESSAGE_BYTES) : limit,
      ]),
    ),
  );
}

const defaultPartitioner = Partitioners.DefaultPartitioner();

/** The partition the producer's default partitioner (murmur2, Java-compatible) picks for a key. */
export function partitionForKey(topic: string, key: string, partitionCount: number): number {
  return defaultPartitioner({
    topic,
    partitionMetadata: Array.from({ length: partitionCount }, (_, partitionId) => ({
      partitionId,
      leader: 0,
      replicas: [0],
      isr: [0],
      partitionErrorCode: 0,
    })),
    message: { key, value: null },
  });
}
