import type { DomainEvent } from '@leadline/events';
import type { CommandServices } from '../src/services';

/** How many records the account topic holds: a rejected request must not have added any. */
export async function logSize(services: CommandServices): Promise<number> {
  const offsets = await services.admin.fetchTopicOffsets(services.topics.account);
  return offsets.reduce((sum, entry) => sum + Number(entry.high), 0);
}

/** Every event on the account topic so far, decoded; read with a throwaway consumer group. */
export async function accountEvents(services: CommandServices): Promise<DomainEvent[]> {
  const offsets = await services.admin.fetchTopicOffsets(services.topics.account);
  const remaining = new Map(offsets.map((entry) => [entry.partition, Number(entry.high)]));
  const events: DomainEvent[] = [];
  const consumer = services.kafka.consumer({ groupId: `log-reader-${Math.random().toString(36).slice(2)}` });
  await consumer.connect();
  await consumer.subscribe({ topic: services.topics.account, fromBeginning: true });
  await new Promise<void>((resolve, reject) => {
    const done = () => [...remaining.values()].every((high) => high === 0);
    if (done()) return resolve();
    consumer
      .run({
        eachMessage: async ({ partition, message }) => {
          events.push(await services.codec.decode(message.value!));
          if (Number(message.offset) + 1 >= (remaining.get(partition) ?? 0)) remaining.set(partition, 0);
          if (done()) resolve();
        },
      })
      .catch(reject);
  });
  await consumer.disconnect();
  return events;
}
