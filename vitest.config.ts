import { defineConfig } from 'vitest/config';

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
          globalSetup: ['packages/test-kit/src/global-setup.ts'],
          testTimeout: 180_000,
          hookTimeout: 120_000,
        },
      },
      {
        // The embedded dashboard in Chromium, against the whole product.
        test: {
          name: 'e2e',
          include: ['apps/*/test/**/*.e2e.test.ts'],
          globalSetup: ['packages/test-kit/src/global-setup.ts'],
          testTimeout: 180_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
