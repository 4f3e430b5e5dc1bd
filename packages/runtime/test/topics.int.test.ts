import { topicNames } from '@leadline/events';
import { createTestEnvironment, type TestEnvironment } from '@leadline/test-kit';
import kafkajs, { type Admin } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKafka, ensureTopics, LOG_MAX_MESSAGE_BYTES } from '../src/kafka';

const { ConfigResourceTypes } = kafkajs;

let env: TestEnvironment;
let admin: Admin;
beforeAll(async () => {
  env = await createTestEnvironment();
  admin = createKafka(env.config.KAFKA_BROKERS, 'topics-test').admin();
  await admin.connect();
});
afterAll(async () => {
  await admin?.disconnect();
  await env?.dispose();
});

async function settingsOf(topic: string) {
  const { resources } = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }],
  });
  return Object.fromEntries(
    resources[0]!.configEntries.map((entry) => [entry.configName, entry.configValue]),
  );
}

describe("the log's topics", () => {
  it('are created keeping every record and accepting the largest batch a request may append', async () => {
    const topics = topicNames(`${env.config.TOPIC_PREFIX}fresh.`);
    await ensureTopics(admin, topics);
    const settings = await settingsOf(topics.account);
    expect(settings['max.message.bytes']).toBe(String(LOG_MAX_MESSAGE_BYTES));
    expect(settings['retention.ms']).toBe('-1');
    await admin.deleteTopics({ topics: Object.values(topics) });
  });

  it('made by an earlier version with a 1 MB limit are raised, their other settings kept', async () => {
    const topics = topicNames(env.config.TOPIC_PREFIX);
    await admin.createTopics({
      waitForLeaders: true,
      topics: Object.values(topics).map((topic) => ({
        topic,
        numPartitions: 1,
        configEntries: [
          { name: 'retention.ms', value: '-1' },
          { name: 'cleanup.policy', value: 'delete' },
        ],
      })),
    });
    await ensureTopics(admin, topics);
    const settings = await settingsOf(topics.partner);
    expect(settings['max.message.bytes']).toBe(String(LOG_MAX_MESSAGE_BYTES));
    expect(settings['retention.ms']).toBe('-1');
  });
});
