import { projections, startProjector, type RunningProjector, defineProjection } from '@leadline/projector';
import { createDb, startMetricsServer, type Database } from '@leadline/runtime';
import { eventually } from '@leadline/test-kit';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

let system: TestSystem;
let partner: PartnerClient;
let projector: RunningProjector;
let projectorDb: Kysely<Database>;

/** A lead named "unprojectable" cannot be projected: it parks its record, as any poison would. */
const faulty = defineProjection('faulty', ['lead.created'], async (_trx, events) => {
  if (events.some((event) => event.data.name === 'unprojectable')) throw new Error('injected fault');
});

beforeAll(async () => {
  system = await startSystem({ projector: false, projectionWaitMs: 3000, gateway: true });
  projectorDb = createDb(system.env.config.DATABASE_URL, { maxConnections: 4 });
  projector = await startProjector({
    ...system.services,
    db: projectorDb,
    groupId: system.projectorGroupId,
    projections: [...projections, faulty],
    onParked: () => undefined,
  });
  partner = partnerClient(system.app, await system.createPartner('Metrics CRM'));
});
afterAll(async () => {
  await projector?.stop();
  await projectorDb?.destroy();
  await system?.close();
});

/** A scrape, as Prometheus makes it: no partner key. */
async function scrape() {
  const response = await system.app.inject({ method: 'GET', url: '/metrics' });
  expect(response.statusCode).toBe(200);
  expect(response.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
  return response.body;
}

/** The value of one series, by its name and exact labels as they appear in the scrape. */
function valueOf(text: string, series: string): number | undefined {
  const line = text.split('\n').find((entry) => entry.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('GET /metrics', () => {
  it('counts requests per route template, times each command stage and shows projector lag, naming no tenant', async () => {
    const account = await partner.post('/accounts', { name: 'Scraped Lending' });
    expect(account.status).toBe(201);
    const lead = await partner.post(`/accounts/${account.body.id}/leads`, {
      phone: '+15125550601',
      name: 'Ana Silva',
    });
    expect(lead.status).toBe(201);
    expect((await partner.get(`/accounts/${account.body.id}/leads/+15125550601`)).status).toBe(200);

    const text = await scrape();
    expect(
      valueOf(
        text,
        'leadline_http_request_duration_seconds_count{method="POST",route="/v1/accounts",status_code="201"}',
      ),
    ).toBeGreaterThanOrEqual(1);
    expect(
      valueOf(
        text,
        'leadline_http_request_duration_seconds_count{method="GET",route="/v1/accounts/:id/leads/:phone",status_code="200"}',
      ),
    ).toBeGreaterThanOrEqual(1);
    // Two commands; creating an account waits for no projection before deciding (a new stream).
    const commandsThrough = { lock: 2, offsets: 1, catch_up: 1, decide: 2, append: 2, read_your_writes: 2 };
    for (const [stage, count] of Object.entries(commandsThrough)) {
      expect(
        valueOf(text, `leadline_command_stage_duration_seconds_count{stage="${stage}"}`),
        stage,
      ).toBeGreaterThanOrEqual(count);
    }
    const topic = system.services.topics.account;
    const lag = text
      .split('\n')
      .filter((line) =>
        line.startsWith(`leadline_consumer_lag_records{consumer="projector",topic="${topic}"`),
      );
    const partitions = (await system.services.admin.fetchTopicOffsets(topic)).length;
    expect(lag).toHaveLength(partitions);
    // Every write answered after the projector applied it: nothing is behind.
    for (const line of lag) expect(Number(line.split(' ').pop())).toBe(0);
    expect(text).toContain('leadline_process_resident_memory_bytes');
    // The SMS gateway runs in this process: its outbox is measured (nothing queued here).
    expect(valueOf(text, 'leadline_queue_depth{queue="sms_outbox"}')).toBe(0);
    expect(valueOf(text, 'leadline_queue_lateness_seconds{queue="sms_outbox"}')).toBe(0);

    // Tenants are not in the labels: no account id, partner id or phone number.
    expect(text).not.toContain(account.body.id);
    expect(text).not.toContain('+15125550601');
    expect(text).not.toContain('5125550601');
  });

  it('shows a parked record in the parked gauge, and the record held behind it', async () => {
    const before =
      valueOf(await scrape(), 'leadline_parked_records{consumer="projector",status="parked"}') ?? 0;
    const account = (await partner.post('/accounts', { name: 'Poisoned Lending' })).body.id as string;
    expect(
      (await partner.post(`/accounts/${account}/leads`, { phone: '+15125550602', name: 'unprojectable' }))
        .status,
    ).toBe(201);
    const parked = await eventually(async () => {
      const value = valueOf(await scrape(), 'leadline_parked_records{consumer="projector",status="parked"}');
      return value !== undefined && value > before ? value : undefined;
    });
    expect(parked).toBe(before + 1);
  });

  it('serves the same text on a standalone listener for services without an HTTP server', async () => {
    const server = await startMetricsServer({ port: 0, host: '127.0.0.1' });
    try {
      const response = await fetch(`http://127.0.0.1:${server.port}/metrics`);
      expect(response.status).toBe(200);
      const text = await response.text();
      expect(text).toContain('leadline_command_stage_duration_seconds_bucket');
      expect(text).toContain('# TYPE leadline_parked_records gauge');
      expect((await fetch(`http://127.0.0.1:${server.port}/`)).status).toBe(404);
    } finally {
      await server.close();
    }
  });
});
