import { createTestEnvironment, type TestEnvironment } from '@leadline/test-kit';
import type { Admin, Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEventProducer, createKafka, createLogEnds } from '../src/kafka';

let env: TestEnvironment;
let kafka: Kafka;
let admin: Admin;
beforeAll(async () => {
  env = await createTestEnvironment();
  kafka = createKafka(env.config.KAFKA_BROKERS, 'log-ends-test');
  admin = kafka.admin();
  await admin.connect();
});
afterAll(async () => {
  await admin?.disconnect();
  await env?.dispose();
});

describe("a log-end reader (the write path's high-watermark lookup)", () => {
  it("answers every partition's end as the admin client does, and sees each append made before it asks", async () => {
    const topic = `${env.config.TOPIC_PREFIX}log-ends`;
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 4 }] });
    const producer = createEventProducer(kafka);
    await producer.connect();
    const ends = createLogEnds(kafka);
    const append = (partition: number, count: number) =>
      producer.send({
        topic,
        messages: Array.from({ length: count }, (_, n) => ({ partition, value: `record ${n}` })),
      });
    const endsByPartition = async () =>
      Object.fromEntries((await ends.of(topic)).map(({ partition, high }) => [partition, high]));
    try {
      expect(await endsByPartition()).toEqual({ 0: '0', 1: '0', 2: '0', 3: '0' });
      await append(0, 3);
      await append(2, 5);
      // Its metadata is kept between lookups; the ends are not.
      expect(await endsByPartition()).toEqual({ 0: '3', 1: '0', 2: '5', 3: '0' });
      await append(3, 1);
      await append(0, 2);
      const admins = Object.fromEntries(
        (await admin.fetchTopicOffsets(topic)).map(({ partition, high }) => [partition, high]),
      );
      expect(await endsByPartition()).toEqual({ 0: '5', 1: '0', 2: '5', 3: '1' });
      expect(await endsByPartition()).toEqual(admins);
    } finally {
      await producer.disconnect();
      await ends.disconnect();
      await admin.deleteTopics({ topics: [topic] });
    }
  });
});
