import {
  JsonDeserializer,
  SchemaRegistryClient,
  SerdeType,
  SubjectNameStrategyType,
} from '@confluentinc/schemaregistry';
import { Kafka, logLevel } from 'kafkajs';
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';

export interface ReplayOptions {
  brokers: string[];
  registryUrl: string;
  topics: string[];
}

/** An event as the README describes the envelope; `data` holds the event's own fields. */
export interface LoggedEvent {
  id: string;
  type: string;
  data: Record<string, unknown>;
  [field: string]: unknown;
}

/**
 * An analyst's replay, written from the README's description of the log alone: both topics from
 * offset 0, each value decoded and validated by Confluent's own JSON Schema deserializer, which looks
 * the writer's schema up by the id in the record and the latest one by TopicRecordNameStrategy
 * (`<topic>-<schema title>`). Hands each event and its Kafka key to `onEvent`, in log order per
 * partition, and stops where the log ended when it started.
 */
export async function replayLog(
  options: ReplayOptions,
  onEvent: (event: LoggedEvent, key: string) => void | Promise<void>,
): Promise<void> {
  const registry = new SchemaRegistryClient({ baseURLs: [options.registryUrl] });
  const deserializer = new JsonDeserializer(registry, SerdeType.VALUE, {
    validate: true,
    useLatestVersion: true,
    subjectNameStrategyType: SubjectNameStrategyType.TOPIC_RECORD,
  });
  const kafka = new Kafka({
    brokers: options.brokers,
    clientId: 'leadline-replay',
    logLevel: logLevel.NOTHING,
  });

  // Where the log ends now: the replay stops there.
  const admin = kafka.admin();
  await admin.connect();
  const remaining = new Map<string, bigint>();
  for (const topic of options.topics) {
    for (const { partition, high } of await admin.fetchTopicOffsets(topic)) {
      if (BigInt(high) > 0n) remaining.set(`${topic}/${partition}`, BigInt(high));
    }
  }
  await admin.disconnect();

  const consumer = kafka.consumer({ groupId: `leadline-replay-${randomUUID()}` });
  await consumer.connect();
  await consumer.subscribe({ topics: options.topics, fromBeginning: true });
  await new Promise<void>((resolve, reject) => {
    if (remaining.size === 0) resolve();
    consumer
      .run({
        eachMessage: async ({ topic, partition, message }) => {
          try {
            const event = (await deserializer.deserialize(topic, message.value!)) as LoggedEvent;
            await onEvent(event, message.key!.toString('utf8'));
          } catch (error) {
            // Stops the replay with the reason, rather than kafkajs retrying the record forever.
            reject(error);
            return;
          }
          const end = remaining.get(`${topic}/${partition}`);
          if (end !== undefined && BigInt(message.offset) + 1n >= end)
            remaining.delete(`${topic}/${partition}`);
          if (remaining.size === 0) resolve();
        },
      })
      .catch(reject);
  }).finally(() => consumer.disconnect());
}

/** Counts the events of the log by type, and collects the Kafka keys it saw. */
export async function countEventsByType(
  options: ReplayOptions,
): Promise<{ byType: Record<string, number>; keys: Set<string> }> {
  const byType: Record<string, number> = {};
  const keys = new Set<string>();
  await replayLog(options, (event, key) => {
    byType[event.type] = (byType[event.type] ?? 0) + 1;
    keys.add(key);
  });
  return { byType, keys };
}

/** Where the log is, from the same settings as the services (see the main README). */
export const replayOptionsFromEnv = (env: NodeJS.ProcessEnv): ReplayOptions => {
  const prefix = env.TOPIC_PREFIX ?? '';
  return {
    brokers: (env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(','),
    registryUrl: env.SCHEMA_REGISTRY_URL ?? 'http://127.0.0.1:8081/apis/ccompat/v7',
    topics: [`${prefix}leadline.account-events`, `${prefix}leadline.partner-events`],
  };
};

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { byType } = await countEventsByType(replayOptionsFromEnv(process.env));
  process.stdout.write(`${JSON.stringify(byType, null, 2)}\n`);
}
