import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveryIdOf } from '../src/fan-out';
import { leadCreated, startHarness, type Harness } from '../../../system-test/relay';

let harness: Harness;
let caDir: string;

beforeAll(async () => {
  harness = await startHarness();
  caDir = mkdtempSync(join(tmpdir(), 'leadline-ca-'));
  writeFileSync(join(caDir, 'receiver.pem'), harness.receiver.ca);
});
afterAll(async () => {
  await harness?.close();
  rmSync(caDir, { recursive: true, force: true });
});

const relayMain = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

/** The relay as it runs in production: its own process, trusting the receiver through NODE_EXTRA_CA_CERTS. */
function startRelayProcess(): ChildProcess {
  const { config } = harness.system.env;
  return spawn(process.execPath, ['--import', 'tsx', relayMain], {
    cwd: repoRoot,
    env: {
      ...process.env,
      DATABASE_URL: config.DATABASE_URL,
      KAFKA_BROKERS: config.KAFKA_BROKERS.join(','),
      SCHEMA_REGISTRY_URL: config.SCHEMA_REGISTRY_URL,
      TOPIC_PREFIX: config.TOPIC_PREFIX,
      NODE_EXTRA_CA_CERTS: join(caDir, 'receiver.pem'),
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_RETRY_DELAYS: '1,1,1,1',
      WEBHOOK_TIMEOUT_MS: '3000',
      // A killed relay's claims come back after this (real time).
      WEBHOOK_LEASE_MS: '5000',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

async function kill(relay: ChildProcess) {
  if (relay.exitCode !== null) return;
  relay.kill('SIGKILL');
  await new Promise((resolve) => relay.once('exit', resolve));
}

describe('the relay process', () => {
  it('killed with SIGKILL mid-schedule and restarted, finishes the schedule, never early', async () => {
    const partner = await harness.createPartner('Process CRM');
    let answered = 0;
    harness.receiver.answer('/process', () => (++answered <= 3 ? { status: 503 } : { status: 200 }));
    const { body: webhook } = await partner.api.post('/webhooks', {
      url: harness.receiver.url('/process'),
      events: ['lead.created'],
      secret: 'whsec_process_0123456789',
    });

    let relay = startRelayProcess();
    try {
      await harness.append(partner, [leadCreated('+15125550199')]);
      await eventually(async () => (harness.receiver.requests('/process').length >= 2 ? true : undefined), {
        timeoutMs: 60_000,
        message: 'the relay never made its first retry',
      });
      await kill(relay);
      const atKill = harness.receiver.requests('/process').length;
      expect(atKill).toBeLessThan(4);

      relay = startRelayProcess();
      const log = await eventually(
        async () => {
          const { body } = await partner.api.get(`/webhooks/${webhook.id}/deliveries`);
          return body.deliveries[0]?.status === 'succeeded' ? body.deliveries[0] : undefined;
        },
        { timeoutMs: 60_000, message: 'the restarted relay did not finish the schedule' },
      );
      const requests = harness.receiver.requests('/process');
      expect(new Set(requests.map((request) => request.headers['x-service-delivery-id']))).toEqual(
        new Set([log.id]),
      );
      // Every attempt recorded once; only an attempt in flight at the kill may have reached the
      // receiver without being recorded, and it was then sent again under the same delivery id.
      const statuses = log.attempts.map((attempt: { status_code: number }) => attempt.status_code);
      expect(statuses.at(-1)).toBe(200);
      expect(statuses.slice(0, -1).every((status: number) => status === 503)).toBe(true);
      expect(requests.length - log.attempts.length).toBeGreaterThanOrEqual(0);
      expect(requests.length - log.attempts.length).toBeLessThanOrEqual(1);
      const times = log.attempts.map((attempt: { attempted_at: string }) => Date.parse(attempt.attempted_at));
      for (let i = 1; i < times.length; i++) expect(times[i] - times[i - 1]).toBeGreaterThanOrEqual(1000);
    } finally {
      await kill(relay);
    }
  });

  it('killed with SIGKILL between the fan-out and the deliveries, delivers every event after a restart, each under one derived delivery id', async () => {
    const partner = await harness.createPartner('Crash CRM');
    // Until the kill, the receiver holds every request: the first deliveries are in flight, the others queued.
    let up = false;
    harness.receiver.answer('/crash', () => (up ? { status: 200 } : { status: 200, hang: true }));
    const { body: webhook } = await partner.api.post('/webhooks', {
      url: harness.receiver.url('/crash'),
      events: ['lead.created'],
      secret: 'whsec_crash_0123456789',
    });

    let relay = startRelayProcess();
    try {
      const events = await harness.append(
        partner,
        Array.from({ length: 5 }, (_, i) => leadCreated(`+1512559${String(1000 + i)}`)),
      );
      await eventually(async () => (harness.receiver.requests('/crash').length >= 1 ? true : undefined), {
        timeoutMs: 60_000,
        message: 'the relay never fanned out and sent',
      });
      await kill(relay);
      up = true;

      relay = startRelayProcess();
      const log = await eventually(
        async () => {
          const { body } = await partner.api.get(`/webhooks/${webhook.id}/deliveries`);
          const succeeded = body.deliveries.filter((d: { status: string }) => d.status === 'succeeded');
          return succeeded.length === events.length ? body.deliveries : undefined;
        },
        { timeoutMs: 60_000, message: 'the restarted relay did not deliver every event' },
      );
      const requests = harness.receiver.requests('/crash');
      for (const event of events) {
        const expected = deliveryIdOf(event.id, webhook.id);
        const carrying = requests.filter(
          (request) => (JSON.parse(request.body.toString('utf8')) as { id: string }).id === event.id,
        );
        expect(carrying.length).toBeGreaterThanOrEqual(1);
        expect(new Set(carrying.map((request) => request.headers['x-service-delivery-id']))).toEqual(
          new Set([expected]),
        );
        expect(log.find((delivery: { event_id: string }) => delivery.event_id === event.id).id).toBe(
          expected,
        );
      }
    } finally {
      await kill(relay);
    }
  });
});
