import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { DEVELOPMENT_DOCUMENT_LINK_KEY, DEVELOPMENT_WEBHOOK_KEY } from '@leadline/runtime';
import { eventually } from '@leadline/test-kit';
import { describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const mains = {
  'command-api': fileURLToPath(new URL('../src/main.ts', import.meta.url)),
  'webhook-relay': fileURLToPath(new URL('../../webhook-relay/src/main.ts', import.meta.url)),
  'sms-gateway': fileURLToPath(new URL('../../sms-gateway/src/main.ts', import.meta.url)),
};

const safe = {
  TWILIO_ACCOUNT_SID: `AC${randomBytes(16).toString('hex')}`,
  TWILIO_AUTH_TOKEN: randomBytes(16).toString('hex'),
  WEBHOOK_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  DOCUMENT_LINK_KEYS: randomBytes(32).toString('base64'),
  // Nothing listens here: a service that got past its checks would fail to connect, not start.
  DATABASE_URL: 'postgres://postgres@127.0.0.1:1/leadline',
  KAFKA_BROKERS: '127.0.0.1:1',
};

/** Runs a service as it is deployed, with only the given environment; resolves when it exits. */
function run(service: keyof typeof mains, env: Record<string, string | undefined>) {
  const child = spawn(process.execPath, ['--import', 'tsx', mains[service]], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, exited, stderr: () => stderr };
}

describe('unsafe settings in production', () => {
  it.each([
    ['command-api', 'TWILIO_AUTH_TOKEN', { TWILIO_AUTH_TOKEN: undefined }],
    [
      'command-api',
      'WEBHOOK_ENCRYPTION_KEY',
      { WEBHOOK_ENCRYPTION_KEY: DEVELOPMENT_WEBHOOK_KEY.toString('hex') },
    ],
    [
      'webhook-relay',
      'WEBHOOK_ENCRYPTION_KEY',
      { WEBHOOK_ENCRYPTION_KEY: DEVELOPMENT_WEBHOOK_KEY.toString('hex') },
    ],
    ['webhook-relay', 'WEBHOOK_ALLOW_PRIVATE_TARGETS', { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' }],
    [
      'command-api',
      'DOCUMENT_LINK_KEYS',
      { DOCUMENT_LINK_KEYS: DEVELOPMENT_DOCUMENT_LINK_KEY.toString('hex') },
    ],
    [
      'webhook-relay',
      'DOCUMENT_LINK_KEYS',
      { DOCUMENT_LINK_KEYS: DEVELOPMENT_DOCUMENT_LINK_KEY.toString('hex') },
    ],
    ['sms-gateway', 'TWILIO_AUTH_TOKEN', { TWILIO_AUTH_TOKEN: undefined }],
  ] as const)('%s refuses to start when %s is unsafe, naming it', async (service, setting, override) => {
    const started = run(service, { ...safe, ...override, NODE_ENV: 'production' });
    expect(await started.exited).not.toBe(0);
    expect(started.stderr()).toContain('refuses to start in production with unsafe settings');
    expect(started.stderr()).toContain(setting);
  });

  it.each(['command-api', 'webhook-relay'] as const)(
    '%s refuses to start without DOCUMENT_LINK_KEYS, naming it',
    async (service) => {
      const started = run(service, { ...safe, DOCUMENT_LINK_KEYS: undefined, NODE_ENV: 'production' });
      expect(await started.exited).not.toBe(0);
      expect(started.stderr()).toMatch(/DOCUMENT_LINK_KEYS: Required in production/);
    },
  );

  it('outside production, says so once, loudly, and goes on starting', async () => {
    const started = run('command-api', { ...safe, TWILIO_AUTH_TOKEN: undefined, NODE_ENV: 'development' });
    try {
      await eventually(async () => (started.stderr().includes('TWILIO_AUTH_TOKEN') ? true : undefined), {
        timeoutMs: 30_000,
        message: 'the start-up warning',
      });
      expect(started.stderr().match(/WARNING: command-api runs with unsafe settings/g)).toHaveLength(1);
      expect(started.stderr()).not.toContain('refuses to start');
    } finally {
      started.child.kill('SIGKILL');
      await started.exited;
    }
  });
});
