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
import { checkLogDurability, declaredDurability } from './log-durability';
import { activeGeneration, followActiveTopics } from './log-generations';
import { createPersonalDataKeys, personalDataKeySettings, type PersonalDataKeys } from './personal-data/keys';
import { createPersonalDataSealer } from './personal-data/sealer';

export interface Infrastructure {
  kafka: Kafka;
  admin: Admin;
  codec: EventCodec;
  /**
   * The active generation's topics, following a migration of the log while the process runs (see
   * `followActiveTopics`): hold on to the object, not to the names it gives at one moment.
   */
  topics: TopicNames;
  db: Kysely<Database>;
  /** The keys sealing each data subject's personal data on the log (erasure destroys them). */
  personalDataKeys: PersonalDataKeys;
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
  // Checked first: production without its keys stops here, before touching anything.
  const keySettings = personalDataKeySettings(config);
  await migrate(config.DATABASE_URL);
  const db = createDb(config.DATABASE_URL, {
    maxConnections: options.maxConnections ?? 10,
    timeouts: databaseTimeouts(config),
  });
  const kafka = createKafka(config.KAFKA_BROKERS, clientId);
  const admin = kafka.admin();
  await admin.connect();
  // Generation 1's topics are created on a fresh deployment; a later generation's were made, with its
  // copied history, by `migrate-log`, and are never made again empty.
  const active = await activeGeneration(db);
  const startTopics = topicNames(config.TOPIC_PREFIX, active.generation);
  const durability = declaredDurability(config);
  await ensureTopics(admin, startTopics, {
    partitions: active.partitions,
    createMissing: active.generation === 1,
    durability,
  });
  // Acknowledged writes survive what the deployment says they survive, or production does not start.
  await checkLogDurability(admin, Object.values(startTopics), durability, config.NODE_ENV ?? 'development');
  const personalDataKeys = createPersonalDataKeys(db, keySettings);
  const codec = await createEventCodec(
    createSchemaRegistry(config.SCHEMA_REGISTRY_URL),
    startTopics,
    createPersonalDataSealer(personalDataKeys),
  );
  const following = followActiveTopics(db, config.TOPIC_PREFIX, active);
  const topics = following.topics;
  return {
    kafka,
    admin,
    codec,
    topics,
    db,
    personalDataKeys,
    async close() {
      following.stop();
      await admin.disconnect();
      await db.destroy();
    },
  };
}
