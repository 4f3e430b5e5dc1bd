import { defineConfig } from 'vitest/config';

/**
 * Tests that break the infrastructure under a write loop and bound how long the product takes to come
 * back (a Kafka node killed, PostgreSQL restarted). They start nodes of their own beside the shared
 * ones, so they never run beside another test file: in a group of their own, one at a time. Where the
 * suite runs files side by side, that group comes after the others; where vitest runs one file at a
 * time (two cores), it puts every other file in a group that comes last, so these run first.
 */
const faultTests = [
  'services/command-api/test/broker-kill.int.test.ts',
  'services/command-api/test/postgres-restart.int.test.ts',
];

const integration = {
  globalSetup: ['packages/test-kit/src/global-setup.ts'],
  testTimeout: 180_000,
  hookTimeout: 120_000,
};

// Tiers by file suffix (see README): unit tests are pure and fast; integration tests run against the
// real Kafka, schema registry and PostgreSQL that scripts/infra starts (or testcontainers with Docker).
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: [
            '{packages,services}/*/{src,test}/**/*.unit.test.ts',
            'apps/*/src/**/*.unit.test.{ts,tsx}',
          ],
        },
      },
      {
        test: {
          name: 'int',
          include: ['{packages,services}/*/{src,test}/**/*.int.test.ts', 'examples/test/**/*.int.test.ts'],
          exclude: ['**/node_modules/**', ...faultTests],
          ...integration,
        },
      },
      {
        // The embedded dashboard in Chromium, against the whole product.
        test: {
          name: 'e2e',
          include: ['apps/*/test/**/*.e2e.test.ts'],
          ...integration,
        },
      },
      {
        test: {
          name: 'faults',
          include: faultTests,
          ...integration,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
