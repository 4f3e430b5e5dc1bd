import { randomBytes } from 'node:crypto';
import { infrastructureConfig, loadConfig, type InfrastructureConfig } from '@leadline/runtime';
import { deleteSubjectsUnder } from '@leadline/test-kit';
import pg from 'pg';
import { countDatabase } from './cpu';

/** A throwaway database and topic prefix on the running infrastructure, like a test file's. */
export async function benchEnvironment(): Promise<{
  config: InfrastructureConfig;
  dispose(): Promise<void>;
}> {
  const base = loadConfig(infrastructureConfig);
  const id = randomBytes(4).toString('hex');
  const url = new URL(base.DATABASE_URL);
  const adminUrl = new URL(base.DATABASE_URL);
  adminUrl.pathname = '/postgres';
  url.pathname = `/leadline_bench_${id}`;
  countDatabase(`leadline_bench_${id}`);
  return {
    config: { ...base, DATABASE_URL: url.toString(), TOPIC_PREFIX: `bench-${id}.` },
    async dispose() {
      // Its registry subjects too, as a test file's: the registry would grow with every run.
      await deleteSubjectsUnder(base.SCHEMA_REGISTRY_URL, `bench-${id}.`);
      const client = new pg.Client({ connectionString: adminUrl.toString() });
      await client.connect();
      await client.query(`drop database if exists "leadline_bench_${id}" with (force)`);
      await client.end();
    },
  };
}
