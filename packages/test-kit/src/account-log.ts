import type { DomainEvent, EventData } from '@leadline/events';
import type { Infrastructure } from '@leadline/runtime';
import type { KafkaMessage } from 'kafkajs';

/** How many records the account topic holds: a rejected request must not have added any. */
export async function logSize(services: Pick<Infrastructure, 'admin' | 'topics'>): Promise<number> {
  const offsets = await services.admin.fetchTopicOffsets(services.topics.account);
  return offsets.reduce((sum, entry) => sum + Number(entry.high), 0);
}

/**
 * Hands every record `topic` holds now to `onRecord`, partition by partition in log order, with a
 * throwaway consumer group; returns once each partition is read to its end.
 */
export async function readTopic(
  services: Pick<Infrastructure, 'admin' | 'kafka'>,
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
export async function accountEvents(
  services: Pick<Infrastructure, 'admin' | 'kafka' | 'topics' | 'codec'>,
): Promise<DomainEvent[]> {
  const events: DomainEvent[] = [];
  await readTopic(services, services.topics.account, async (_, message) => {
    const event = await services.codec.decode(message.value!).catch(() => undefined);
    if (event) events.push(event);
  });
  return events;
}

/**
 * Every byte on the log's topics under `prefix` (every generation's): each record's key, value and
 * headers, as Latin-1 text, so a value written in clear shows as itself.
 */
export async function rawLogText(
  services: Pick<Infrastructure, 'admin' | 'kafka'>,
  prefix: string,
): Promise<string> {
  const topics = (await services.admin.listTopics()).filter((topic) => topic.startsWith(prefix));
  const chunks: Buffer[] = [];
  for (const topic of topics) {
    await readTopic(services, topic, (_, message) => {
      if (message.key) chunks.push(message.key);
      if (message.value) chunks.push(message.value);
      for (const value of Object.values(message.headers ?? {})) chunks.push(Buffer.from(String(value)));
    });
  }
  return Buffer.concat(chunks).toString('latin1');
}

/** A new lead's data with every optional field empty; a test names only what it varies. */
export const newLeadData = (
  lead: Partial<EventData<'lead.created'>> & Pick<EventData<'lead.created'>, 'lead_id' | 'phone'>,
): EventData<'lead.created'> => ({
  name: null,
  first_name: null,
  last_name: null,
  email: null,
  company: null,
  notes: null,
  source: null,
  external_id: null,
  property_address: null,
  metadata: {},
  status: 'new',
  auto_sequence: false,
  origin: 'api',
  ...lead,
});
