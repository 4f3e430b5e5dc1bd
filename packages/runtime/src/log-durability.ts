import kafkajs, { type Admin } from 'kafkajs';
import { ConfigError } from './config';

const { ConfigResourceTypes } = kafkajs;

/**
 * What the deployment declares of its brokers (KAFKA_REPLICATION_FACTOR, KAFKA_MIN_INSYNC_REPLICAS):
 * how many copies of each partition the log's topics keep, and how many of them acknowledge a write
 * (acks=all waits for `min.insync.replicas`). On a cluster of three: 3 and 2, so one broker may die
 * without losing an acknowledged write or refusing writes; on one broker, 1 and 1.
 */
export interface LogDurability {
  replicationFactor: number;
  minInsyncReplicas: number;
}

export function declaredDurability(config: {
  KAFKA_REPLICATION_FACTOR?: number | undefined;
  KAFKA_MIN_INSYNC_REPLICAS?: number | undefined;
}): LogDurability {
  const replicationFactor = config.KAFKA_REPLICATION_FACTOR ?? 1;
  const minInsyncReplicas =
    config.KAFKA_MIN_INSYNC_REPLICAS ?? Math.max(1, Math.min(2, replicationFactor - 1));
  if (minInsyncReplicas > replicationFactor) {
    throw new ConfigError(
      `Invalid configuration:\n  KAFKA_MIN_INSYNC_REPLICAS: ${minInsyncReplicas} is above KAFKA_REPLICATION_FACTOR ${replicationFactor} (no write could ever be acknowledged)`,
    );
  }
  return { replicationFactor, minInsyncReplicas };
}

/**
 * How the event producer writes: idempotent (a retried send is never written twice) and acks=all (a
 * write is acknowledged once `min.insync.replicas` copies have it). `createEventProducer` and the
 * appender use these; the start-up check states them beside the topics'.
 */
export const EVENT_PRODUCER_DURABILITY = { idempotent: true, acks: -1 } as const;

/** What the cluster has for one topic: its fewest replicas of any partition, its `min.insync.replicas`. */
export interface TopicDurability {
  topic: string;
  replicationFactor: number;
  minInsyncReplicas: number;
}

/** Every way the topics and the producer fall short of what the deployment declares, one line each. */
export function durabilityShortfalls(
  declared: LogDurability,
  observed: TopicDurability[],
  producer: { idempotent: boolean; acks: number } = EVENT_PRODUCER_DURABILITY,
): string[] {
  const problems: string[] = [];
  if (!producer.idempotent) problems.push('the event producer is not idempotent');
  if (producer.acks !== -1) problems.push(`the event producer writes with acks=${producer.acks}, not all`);
  for (const topic of observed) {
    if (topic.replicationFactor < declared.replicationFactor) {
      problems.push(
        `${topic.topic}: replication factor ${topic.replicationFactor}, below the declared ${declared.replicationFactor}`,
      );
    }
    if (topic.minInsyncReplicas < declared.minInsyncReplicas) {
      problems.push(
        `${topic.topic}: min.insync.replicas ${topic.minInsyncReplicas}, below the declared ${declared.minInsyncReplicas}`,
      );
    }
  }
  return problems;
}

/** Reads each topic's replicas and its effective `min.insync.replicas` (its own, or the broker's). */
export async function describeTopicDurability(admin: Admin, topics: string[]): Promise<TopicDurability[]> {
  const { topics: metadata } = await admin.fetchTopicMetadata({ topics });
  const { resources } = await admin.describeConfigs({
    includeSynonyms: false,
    resources: topics.map((name) => ({
      type: ConfigResourceTypes.TOPIC,
      name,
      configNames: ['min.insync.replicas'],
    })),
  });
  const minIsr = new Map(
    resources.map((resource) => [
      resource.resourceName,
      Number(
        resource.configEntries.find((entry) => entry.configName === 'min.insync.replicas')?.configValue ?? 1,
      ),
    ]),
  );
  return metadata.map((topic) => ({
    topic: topic.name,
    replicationFactor: Math.min(...topic.partitions.map((partition) => partition.replicas.length)),
    minInsyncReplicas: minIsr.get(topic.name) ?? 1,
  }));
}

export class LogDurabilityError extends Error {}

/**
 * The start-up check: the log's topics and the producer against what the deployment declares. In
 * production a shortfall refuses to start, naming each topic (acknowledged writes could be lost to
 * one broker's failure); elsewhere it is one loud warning (a single local broker with a cluster's
 * settings left over, say).
 */
export async function checkLogDurability(
  admin: Admin,
  topics: string[],
  declared: LogDurability,
  nodeEnv: string,
  warn: (message: string) => void = console.warn,
): Promise<void> {
  const problems = durabilityShortfalls(declared, await describeTopicDurability(admin, topics));
  if (problems.length === 0) return;
  const message = `the event log is less durable than declared (KAFKA_REPLICATION_FACTOR ${declared.replicationFactor}, KAFKA_MIN_INSYNC_REPLICAS ${declared.minInsyncReplicas}):\n${problems.map((problem) => `  ${problem}`).join('\n')}`;
  if (nodeEnv === 'production') throw new LogDurabilityError(`Refusing to start in production: ${message}`);
  warn(`*** WARNING: ${message}`);
}
