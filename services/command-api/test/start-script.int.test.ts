import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createTestEnvironment, eventually, freePort, type TestEnvironment } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
let env: TestEnvironment;
let script: ChildProcess | undefined;

beforeAll(async () => {
  env = await createTestEnvironment();
});
afterAll(async () => {
  // Whatever the outcome, nothing this test started outlives it.
  if (script?.pid && script.exitCode === null) process.kill(-script.pid, 'SIGKILL');
  await env?.dispose();
});

const withoutPartnerKey = ({ PARTNER_API_KEY: _unused, ...rest }: NodeJS.ProcessEnv) => rest;

const running = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('npm start', () => {
  it('stops every service and exits non-zero when one of them dies, leaving no sender running alone', async () => {
    const port = await freePort();
    script = spawn('bash', ['scripts/start.sh'], {
      cwd: repoRoot,
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: {
        ...withoutPartnerKey(process.env),
        LEADLINE_SKIP_INFRA: '1',
        DATABASE_URL: env.config.DATABASE_URL,
        KAFKA_BROKERS: env.config.KAFKA_BROKERS.join(','),
        SCHEMA_REGISTRY_URL: env.config.SCHEMA_REGISTRY_URL,
        TOPIC_PREFIX: env.config.TOPIC_PREFIX,
        PORT: String(port),
        SHUTDOWN_GRACE_SECONDS: '20',
      },
    });
    const pids = new Map<string, number>();
    let output = '';
    script.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      for (const [, name, pid] of output.matchAll(/^([a-z-]+): pid (\d+)$/gm)) pids.set(name!, Number(pid));
    });
    const exited = new Promise<number | null>((resolve) => script!.once('exit', (code) => resolve(code)));

    const services = [
      'ai-agent',
      'carrier-registration',
      'command-api',
      'inbound-decider',
      'projector',
      'sequencer',
      'sms-gateway',
      'webhook-relay',
    ];
    await eventually(async () => (pids.size === services.length ? true : undefined), { timeoutMs: 60_000 });
    expect([...pids.keys()].sort()).toEqual(services);
    await eventually(
      async () => {
        const response = await fetch(`http://127.0.0.1:${port}/health/ready`).catch(() => undefined);
        return response?.ok ? true : undefined;
      },
      { timeoutMs: 120_000, message: `the API never became ready:\n${output}` },
    );

    process.kill(pids.get('projector')!, 'SIGKILL');
    expect(await exited).not.toBe(0);
    for (const [name, pid] of pids) expect({ name, running: running(pid) }).toEqual({ name, running: false });
  });
});
