import {
  createEventCodec,
  createSchemaRegistry,
  topicNames,
  type EventCodec,
  type TopicNames,
} from '@leadline/events';
import type { Admin, Kafka } from 'kafkajs';
import type { Kysely } from 'kysely';
import { databaseTimeouts, type InfrastructureConfig } from './config';
import { createDb } from './db/database';
import { migrate } from './db/migrate';
import type { Database } from './db/schema';
import { createKafka, ensureTopics } from './kafka';

export interface Infrastructure {
  kafka: Kafka;
  admin: Admin;
  codec: EventCodec;
  topics: TopicNames;
  db: Kysely<Database>;
  close(): Promise<void>;
}

/**
 * What every process of the service starts from: the database migrated, the topics created, every
 * event schema registered. All three steps are idempotent, so any process may start first.
 */
export async function connectInfrastructure(
  config: InfrastructureConfig,
  clientId: string,
  options: { maxConnections?: number } = {},
): Promise<Infrastructure> {
  await migrate(config.DATABASE_URL);
  const kafka = createKafka(config.KAFKA_BROKERS, clientId);
  const admin = kafka.admin();
  await admin.connect();
  const topics = topicNames(config.TOPIC_PREFIX);
  await ensureTopics(admin, topics);
  const codec = await createEventCodec(createSchemaRegistry(config.SCHEMA_REGISTRY_URL), topics);
  const db = createDb(config.DATABASE_URL, {
    maxConnections: options.maxConnections ?? 10,
    timeouts: databaseTimeouts(config),
  });
  return {
    kafka,
    admin,
    codec,
    topics,
    db,
    async close() {
      await admin.disconnect();
      await db.destroy();
    },
  };
}
