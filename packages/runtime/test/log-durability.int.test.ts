import { randomBytes } from 'node:crypto';
import { createTestEnvironment, type TestEnvironment } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { connectInfrastructure } from '../src/infrastructure';
import { describeTopicDurability, LogDurabilityError } from '../src/log-durability';

let env: TestEnvironment;
beforeAll(async () => {
  env = await createTestEnvironment();
  // The product's own topic setup, as one broker gets it: replication factor 1, min.insync.replicas 1.
  const first = await connectInfrastructure(env.config, 'durability-test');
  await first.close();
});
afterAll(() => env?.dispose());

describe('the start-up check of the log against what the deployment declares', () => {
  it('finds the topics the product created on one broker at replication factor 1 and min.insync.replicas 1', async () => {
    const infrastructure = await connectInfrastructure(env.config, 'durability-test');
    try {
      const observed = await describeTopicDurability(
        infrastructure.admin,
        Object.values(infrastructure.topics),
      );
      expect(observed.length).toBeGreaterThan(0);
      for (const topic of observed)
        expect(topic).toMatchObject({ replicationFactor: 1, minInsyncReplicas: 1 });
    } finally {
      await infrastructure.close();
    }
  });

  it('refuses to start in production on topics below the declared replication, naming each', async () => {
    // With the keys production requires, so that what stops it is the log.
    const declaringACluster = {
      ...env.config,
      KAFKA_REPLICATION_FACTOR: 3,
      NODE_ENV: 'production',
      PERSONAL_DATA_KEYS: [randomBytes(32)],
      PERSONAL_DATA_HASH_KEY: randomBytes(32),
    };
    const refusal = await connectInfrastructure(declaringACluster, 'durability-test').catch(
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(LogDurabilityError);
    const message = (refusal as Error).message;
    expect(message).toMatch(/Refusing to start in production/);
    expect(message).toContain(`${env.config.TOPIC_PREFIX}`);
    expect(message).toMatch(/replication factor 1, below the declared 3/);
    expect(message).toMatch(/min.insync.replicas 1, below the declared 2/);
  });

  it('only warns outside production, and starts', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      const infrastructure = await connectInfrastructure(
        { ...env.config, KAFKA_REPLICATION_FACTOR: 3, NODE_ENV: 'development' },
        'durability-test',
      );
      await infrastructure.close();
      expect(warn.mock.calls.map((call) => String(call[0])).join('\n')).toMatch(
        /less durable than declared[\s\S]*replication factor 1, below the declared 3/,
      );
    } finally {
      warn.mockRestore();
    }
  });
});
