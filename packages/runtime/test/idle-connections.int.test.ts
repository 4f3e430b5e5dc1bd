import { createRequire } from 'node:module';
import { createTestEnvironment, type TestEnvironment } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEventProducer, createKafka } from '../src/kafka';

let env: TestEnvironment;
beforeAll(async () => {
  env = await createTestEnvironment();
});
afterAll(() => env?.dispose());

/** kafkajs's per-connection request queue, whose queue check is counted here. */
const { prototype: requestQueue } = createRequire(import.meta.url)(
  'kafkajs/src/network/requestQueue/index.js',
) as { prototype: { checkPendingRequests(): void } };

describe('an idle Kafka connection', () => {
  it('does not wake up every millisecond to look at an empty request queue', async () => {
    const kafka = createKafka(env.config.KAFKA_BROKERS, 'idle-test');
    const admin = kafka.admin();
    const producer = createEventProducer(kafka);
    await admin.connect();
    await producer.connect();
    const check = requestQueue.checkPendingRequests;
    let checks = 0;
    requestQueue.checkPendingRequests = function (this: unknown) {
      checks++;
      return check.call(this);
    };
    try {
      // Requests on both clients' connections, then nothing for half a second.
      await admin.fetchTopicOffsets((await admin.listTopics())[0] ?? '__consumer_offsets');
      await new Promise((resolve) => setTimeout(resolve, 100));
      checks = 0;
      await new Promise((resolve) => setTimeout(resolve, 500));
      // kafkajs 2.2.4 alone re-arms a 1 ms timer per connection: hundreds of checks here.
      expect(checks).toBe(0);
    } finally {
      requestQueue.checkPendingRequests = check;
      await producer.disconnect();
      await admin.disconnect();
    }
  });
});
