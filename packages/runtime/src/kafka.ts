import { Kafka, logLevel, Partitioners, type Admin, type Producer } from 'kafkajs';
import { topicPartitions, type TopicNames } from '@leadline/events';

export function createKafka(brokers: string[], clientId: string): Kafka {
  return new Kafka({
    clientId,
    brokers,
    logLevel: logLevel.WARN,
    retry: { initialRetryTime: 100, retries: 8 },
  });
}

/**
 * Idempotent, acks=all: a retried send is never written twice, and an acknowledged event survives a
 * broker failure. kafkajs requires one request in flight for idempotence.
 */
export function createEventProducer(kafka: Kafka): Producer {
  return kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
}

/** Creates the log's topics if missing (broker auto-creation is off). Retention is infinite. */
export async function ensureTopics(admin: Admin, topics: TopicNames): Promise<void> {
  const existing = new Set(await admin.listTopics());
  const missing = (Object.keys(topics) as (keyof TopicNames)[]).filter((kind) => !existing.has(topics[kind]));
  if (missing.length === 0) return;
  await admin.createTopics({
    waitForLeaders: true,
    topics: missing.map((kind) => ({
      topic: topics[kind],
      numPartitions: topicPartitions[kind],
      replicationFactor: 1,
      configEntries: [{ name: 'retention.ms', value: '-1' }],
    })),
  });
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
