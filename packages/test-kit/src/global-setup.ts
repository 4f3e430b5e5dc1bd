import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import type { TestInfrastructure } from './infrastructure';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

function dockerAvailable(): boolean {
  try {
    execFileSync('docker', ['info'], { stdio: 'ignore', timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

/** Kafka, the registry and PostgreSQL started by our own scripts (no Docker needed). */
function startLocal(): TestInfrastructure {
  execFileSync('bash', ['scripts/infra/up.sh'], { cwd: repoRoot, stdio: 'inherit' });
  return {
    kafkaBrokers: (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(','),
    schemaRegistryUrl: process.env.SCHEMA_REGISTRY_URL ?? 'http://127.0.0.1:8081/apis/ccompat/v7',
    postgresAdminUrl: process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  };
}

/**
 * One infrastructure per test run: testcontainers where a Docker engine answers, otherwise the local
 * processes of scripts/infra. LEADLINE_TEST_INFRA=local|containers forces either.
 */
export default async function setup(project: TestProject) {
  const mode = process.env.LEADLINE_TEST_INFRA ?? (dockerAvailable() ? 'containers' : 'local');
  if (mode === 'containers') {
    const { startContainers } = await import('./containers');
    const { infrastructure, stop } = await startContainers();
    project.provide('infrastructure', infrastructure);
    return stop;
  }
  project.provide('infrastructure', startLocal());
  return undefined;
}
