import {
  JsonDeserializer,
  SchemaRegistryClient,
  SerdeType,
  SubjectNameStrategyType,
} from '@confluentinc/schemaregistry';
import { Kafka, logLevel } from 'kafkajs';
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';

/**
 * An analyst's replay, written from the README's description of the log alone: both topics from
 * offset 0, each value decoded and validated by Confluent's own JSON Schema deserializer, which looks
 * the writer's schema up by the id in the record and the latest one by TopicRecordNameStrategy
 * (`<topic>-<schema title>`). Counts the events by type.
 */
export async function countEventsByType(options: {
  brokers: string[];
  registryUrl: string;
  topics: string[];
}): Promise<{ byType: Record<string, number>; keys: Set<string> }> {
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

  const byType: Record<string, number> = {};
  const keys = new Set<string>();
  const consumer = kafka.consumer({ groupId: `leadline-replay-${randomUUID()}` });
  await consumer.connect();
  await consumer.subscribe({ topics: options.topics, fromBeginning: true });
  await new Promise<void>((resolve, reject) => {
    if (remaining.size === 0) resolve();
    consumer
      .run({
        eachMessage: async ({ topic, partition, message }) => {
          const event = (await deserializer.deserialize(topic, message.value!)) as { type: string };
          byType[event.type] = (byType[event.type] ?? 0) + 1;
          keys.add(message.key!.toString('utf8'));
          const end = remaining.get(`${topic}/${partition}`);
          if (end !== undefined && BigInt(message.offset) + 1n >= end)
            remaining.delete(`${topic}/${partition}`);
          if (remaining.size === 0) resolve();
        },
      })
      .catch(reject);
  });
  await consumer.disconnect();
  return { byType, keys };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const prefix = process.env.TOPIC_PREFIX ?? '';
  const { byType } = await countEventsByType({
    brokers: (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(','),
    registryUrl: process.env.SCHEMA_REGISTRY_URL ?? 'http://127.0.0.1:8081/apis/ccompat/v7',
    topics: [`${prefix}leadline.account-events`, `${prefix}leadline.partner-events`],
  });
  process.stdout.write(`${JSON.stringify(byType, null, 2)}\n`);
}
