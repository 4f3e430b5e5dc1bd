import {
  createDb,
  createSecretBox,
  DEVELOPMENT_WEBHOOK_KEY,
  systemClock,
  type Database,
} from '@leadline/runtime';
import { createLocalCarrierRegistration } from '@leadline/telephony';
import { eventually } from '@leadline/test-kit';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness, type RelayInstance } from '../../../system-test/relay';
import { startRegistrationWorker, type RunningRegistrationWorker } from '../src';
import { businessProfile } from './harness';

let harness: Harness;
let relay: RelayInstance;
let workerDb: Kysely<Database>;
let local: ReturnType<typeof createLocalCarrierRegistration>;
let worker: RunningRegistrationWorker;

beforeAll(async () => {
  harness = await startHarness();
  relay = await harness.startRelayInstance();
  const url = harness.system.env.config.DATABASE_URL;
  workerDb = createDb(url, { maxConnections: 4 });
  // Reviews decided at once, looked at every 50 ms: the whole registration runs in moments.
  local = createLocalCarrierRegistration({ databaseUrl: url, clock: systemClock, decisionDelayMs: 0 });
  worker = startRegistrationWorker({
    db: workerDb,
    commands: harness.system.services.commands,
    carrier: local,
    secrets: createSecretBox(DEVELOPMENT_WEBHOOK_KEY),
    clock: systemClock,
    checkSchedule: { minMs: 50, maxMs: 50 },
    retrySchedule: { baseMs: 50, maxMs: 50 },
    callTimeoutMs: 10_000,
    pollIntervalMs: 50,
  });
});
afterAll(async () => {
  await worker?.stop();
  await local?.close();
  await workerDb?.destroy();
  await harness?.close();
});

describe('the compliance.status_changed webhook', () => {
  it("tells a subscribed partner of every step's change, with the carrier's reason for a failure", async () => {
    const partner = await harness.createPartner('Registration CRM');
    const { body: webhook } = await partner.api.post('/webhooks', {
      url: harness.receiver.url('/compliance'),
      events: ['compliance.status_changed'],
      secret: 'whsec_compliance_0123456789',
    });
    expect(webhook.events).toEqual(['compliance.status_changed']);
    const submitted = await harness.system.app.inject({
      method: 'PUT',
      url: `/v1/accounts/${partner.accountId}/compliance/registration`,
      headers: { 'x-partner-key': partner.key },
      payload: businessProfile({ legal_name: 'Sunrise Lending FAIL CAMPAIGN' }),
    });
    expect(submitted.statusCode).toBe(201);

    const expected = 4;
    await eventually(
      async () => {
        const rows = await harness.system.services.db
          .selectFrom('webhook_deliveries')
          .select('id')
          .where('webhook_id', '=', webhook.id)
          .execute();
        return rows.length === expected ? rows : undefined;
      },
      { timeoutMs: 30_000, message: 'the step changes never became deliveries' },
    );
    await relay.dispatcher.drain();
    const payloads = harness.receiver
      .requests('/compliance')
      .map(({ body }) => JSON.parse(body.toString('utf8')))
      .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
    expect(payloads.map((payload) => payload.type)).toEqual(
      Array(expected).fill('compliance.status_changed'),
    );
    expect(payloads.map((payload) => payload.account_id)).toEqual(Array(expected).fill(partner.accountId));
    expect(payloads.map((payload) => payload.data)).toEqual([
      {
        account_id: partner.accountId,
        step: 'customer_profile',
        previous_status: 'draft',
        new_status: 'approved',
        reason: null,
      },
      {
        account_id: partner.accountId,
        step: 'brand',
        previous_status: 'draft',
        new_status: 'pending',
        reason: null,
      },
      {
        account_id: partner.accountId,
        step: 'brand',
        previous_status: 'pending',
        new_status: 'approved',
        reason: null,
      },
      {
        account_id: partner.accountId,
        step: 'campaign',
        previous_status: 'draft',
        new_status: 'failed',
        reason: 'The sample messages do not say how to opt out (simulated).',
      },
    ]);
  });
});
