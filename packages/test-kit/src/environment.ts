import { randomBytes } from 'node:crypto';
import { createKafka, type InfrastructureConfig } from '@leadline/runtime';
import pg from 'pg';
import { inject } from 'vitest';
import { deleteSubjectsUnder } from './registry-subjects';

export interface TestEnvironment {
  config: InfrastructureConfig;
  dispose(): Promise<void>;
}

/**
 * An isolated slice of the shared infrastructure for one test file: its own database and its own
 * topic prefix (so its own topics, consumer groups and registry subjects). Files run in parallel.
 */
export async function createTestEnvironment(): Promise<TestEnvironment> {
  const { kafkaBrokers, schemaRegistryUrl, postgresAdminUrl } = inject('infrastructure');
  const id = randomBytes(5).toString('hex');
  const databaseUrl = new URL(postgresAdminUrl);
  databaseUrl.pathname = `/leadline_test_${id}`;
  const config: InfrastructureConfig = {
    DATABASE_URL: databaseUrl.toString(),
    KAFKA_BROKERS: kafkaBrokers,
    SCHEMA_REGISTRY_URL: schemaRegistryUrl,
    TOPIC_PREFIX: `test-${id}.`,
    // The development master and hash keys, as every process the tests start uses.
    PERSONAL_DATA_KEYS: [],
  };
  return {
    config,
    async dispose() {
      const admin = createKafka(kafkaBrokers, 'leadline-test-kit').admin();
      await admin.connect();
      // Every topic the file created under its prefix (the service's, and any a test made for itself),
      // and only those: kafkajs retries a delete that names an unknown topic for seconds.
      const created = (await admin.listTopics()).filter((topic) => topic.startsWith(config.TOPIC_PREFIX));
      if (created.length > 0) await admin.deleteTopics({ topics: created }).catch(() => undefined);
      await admin.disconnect();
      // The file's registry subjects go too, so the registry does not grow with every run. Subjects are
      // named after topics.
      await deleteSubjectsUnder(schemaRegistryUrl, config.TOPIC_PREFIX);
      const client = new pg.Client({ connectionString: postgresAdminUrl });
      await client.connect();
      await client.query(`drop database if exists "leadline_test_${id}" with (force)`);
      await client.end();
    },
  };
}

/** Polls `probe` until it returns a value other than undefined; fails with `message` at the deadline. */
export async function eventually<T>(
  probe: () => Promise<T | undefined>,
  { timeoutMs = 20_000, intervalMs = 50, message = 'condition not met' } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms: ${message}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
