import { randomBytes } from 'node:crypto';
import type { Admin, Kafka, KafkaMessage } from 'kafkajs';

/**
 * Hands every record of `topic` in the given offset ranges (from inclusive, to exclusive) to
 * `onMessage`, partition by partition in log order, through a throwaway consumer group; returns once
 * each range is read. For reading a known stretch of the log (what a copy wrote before it was
 * interrupted), not for following it.
 */
export async function readLogRanges(
  kafka: Kafka,
  admin: Admin,
  topic: string,
  ranges: ReadonlyMap<number, { from: bigint; to: bigint }>,
  onMessage: (partition: number, message: KafkaMessage) => Promise<void> | void,
): Promise<void> {
  const pending = new Map([...ranges].filter(([, range]) => range.to > range.from));
  if (pending.size === 0) return;
  const groupId = `leadline.log-reader.${randomBytes(6).toString('hex')}`;
  const consumer = kafka.consumer({ groupId, allowAutoTopicCreation: false });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    // The seek may land after a first fetch from offset 0: records before the range are passed over.
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      for (const partition of payload.memberAssignment[topic] ?? []) {
        const range = pending.get(partition);
        if (range) consumer.seek({ topic, partition, offset: range.from.toString() });
      }
    });
    await new Promise<void>((resolve, reject) => {
      consumer
        .run({
          autoCommit: false,
          eachBatch: async ({ batch }) => {
            const range = pending.get(batch.partition);
            if (!range) return;
            for (const message of batch.messages) {
              const offset = BigInt(message.offset);
              if (offset < range.from || offset >= range.to) continue;
              await onMessage(batch.partition, message);
              if (offset + 1n >= range.to) pending.delete(batch.partition);
            }
            if (pending.size === 0) resolve();
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect();
    await admin.deleteGroups([groupId]).catch(() => undefined);
  }
}
