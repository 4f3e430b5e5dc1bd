import type { DomainEvent } from '@leadline/events';
import type { Database } from '@leadline/runtime';
import { Kafka, logLevel, type KafkaMessage } from 'kafkajs';
import { sql, type Kysely } from 'kysely';
import type { CommandServices } from '../src/services';

/** How many records the account topic holds: a rejected request must not have added any. */
export async function logSize(services: CommandServices): Promise<number> {
  const offsets = await services.admin.fetchTopicOffsets(services.topics.account);
  return offsets.reduce((sum, entry) => sum + Number(entry.high), 0);
}

/**
 * Hands every record `topic` holds now to `onRecord`, partition by partition in log order, with a
 * throwaway consumer group; returns once each partition is read to its end.
 */
export async function readTopic(
  services: Pick<CommandServices, 'admin' | 'kafka'>,
  topic: string,
  onRecord: (partition: number, message: KafkaMessage) => Promise<void> | void,
): Promise<void> {
  const offsets = await services.admin.fetchTopicOffsets(topic);
  const remaining = new Map(offsets.map((entry) => [entry.partition, Number(entry.high)]));
  const consumer = services.kafka.consumer({ groupId: `log-reader-${Math.random().toString(36).slice(2)}` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await new Promise<void>((resolve, reject) => {
    const done = () => [...remaining.values()].every((high) => high === 0);
    if (done()) return resolve();
    consumer
      .run({
        eachMessage: async ({ partition, message }) => {
          await onRecord(partition, message);
          if (Number(message.offset) + 1 >= (remaining.get(partition) ?? 0)) remaining.set(partition, 0);
          if (done()) resolve();
        },
      })
      .catch(reject);
  });
  await consumer.disconnect();
}

/**
 * Every event on the account topic so far, decoded. A record that does not decode (the poison a
 * parking test writes) is left out rather than stopping the read.
 */
export async function accountEvents(services: CommandServices): Promise<DomainEvent[]> {
  const events: DomainEvent[] = [];
  await readTopic(services, services.topics.account, async (_, message) => {
    const event = await services.codec.decode(message.value!).catch(() => undefined);
    if (event) events.push(event);
  });
  return events;
}

/**
 * A Kafka client for a broker that refuses every connection, without retrying: each append of a
 * command bus built on it fails at once, as when the broker is gone.
 */
export function refusingKafka(): Kafka {
  return new Kafka({
    clientId: 'refused',
    brokers: ['127.0.0.1:1'],
    retry: { retries: 0 },
    logLevel: logLevel.NOTHING,
  });
}

/** Every row of every read model, in a stable order: what a rebuild must reproduce. */
export async function readModelSnapshot(db: Kysely<Database>): Promise<Record<string, unknown[]>> {
  const { rows: tables } = await sql<{ table_name: string }>`
    select table_name from information_schema.tables
    where table_schema = 'read_model'
      and table_name not in ('projection_checkpoints', 'projection_parked_records', 'kysely_migration', 'kysely_migration_lock')
    order by table_name`.execute(db);
  const snapshot: Record<string, unknown[]> = {};
  for (const { table_name } of tables) {
    const { rows } = await sql`select * from ${sql.table(`read_model.${table_name}`)}`.execute(db);
    snapshot[table_name] = rows.map((row) => JSON.stringify(row)).sort();
  }
  return snapshot;
}
