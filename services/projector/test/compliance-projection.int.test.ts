import type { DomainEvent, EventData, EventType } from '@leadline/events';
import { campaignStatuses } from '@leadline/decision-state';
import { connectInfrastructure, newUuid, type Infrastructure } from '@leadline/runtime';
import { createTestEnvironment, registrationProfile, type TestEnvironment } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { complianceProjection } from '../src/compliance/projection';

let env: TestEnvironment;
let infrastructure: Infrastructure;

beforeAll(async () => {
  env = await createTestEnvironment();
  infrastructure = await connectInfrastructure(env.config, 'leadline-compliance-projection-test');
});
afterAll(async () => {
  await infrastructure?.close();
  await env?.dispose();
});

function accountEvent<T extends EventType>(type: T, accountId: string, data: EventData<T>, minute: number) {
  return {
    id: newUuid(),
    type,
    version: 1,
    account_id: accountId,
    partner_id: 'partner-1',
    occurred_at: new Date(Date.UTC(2026, 2, 2, 15, minute)).toISOString(),
    actor: { kind: 'system', service: 'test' },
    correlation_id: 'test',
    causation_id: null,
    data,
  } as DomainEvent;
}

const submitted = (accountId: string, submission: string, minute: number) =>
  accountEvent(
    'compliance.registration_submitted',
    accountId,
    {
      submission_id: submission,
      profile: registrationProfile,
      tax_id: { last4: '6789', ciphertext: 'v2.sealed' },
    },
    minute,
  );
const changed = (accountId: string, submission: string, step: string, status: string, minute: number) =>
  accountEvent(
    'compliance.registration_step_changed',
    accountId,
    {
      submission_id: submission,
      step: step as never,
      previous_status: 'draft',
      status: status as never,
      reason: status === 'failed' ? 'EIN mismatch' : null,
    },
    minute,
  );
const created = (accountId: string, submission: string, resource: string, id: string, minute: number) =>
  accountEvent(
    'compliance.registration_resource_created',
    accountId,
    { submission_id: submission, resource: resource as never, provider_id: id },
    minute,
  );

const apply = (events: DomainEvent[]) =>
  infrastructure.db.transaction().execute((trx) => complianceProjection.apply(trx, events));
const rowOf = (accountId: string) =>
  infrastructure.db
    .selectFrom('carrier_registrations')
    .selectAll()
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();

describe('the carrier registration projection', () => {
  it('keeps each step with its reason and time, and applying the same events twice changes nothing', async () => {
    const account = newUuid();
    const events = [
      submitted(account, 's1', 0),
      created(account, 's1', 'customer_profile', 'BU1', 1),
      changed(account, 's1', 'customer_profile', 'approved', 2),
      created(account, 's1', 'trust_product', 'BU2', 3),
      changed(account, 's1', 'brand', 'failed', 4),
    ];
    await apply(events);
    const once = await rowOf(account);
    expect(once).toMatchObject({
      submission_id: 's1',
      partner_id: 'partner-1',
      tax_id_last4: '6789',
      customer_profile_status: 'approved',
      brand_status: 'failed',
      brand_reason: 'EIN mismatch',
      brand_updated_at: new Date(Date.UTC(2026, 2, 2, 15, 4)),
      campaign_status: 'draft',
      campaign_updated_at: new Date(Date.UTC(2026, 2, 2, 15, 0)),
      resources: { customer_profile: 'BU1', trust_product: 'BU2' },
      profile: registrationProfile,
    });
    await apply(events);
    expect(await rowOf(account)).toEqual(once);
  });

  it("answers each account's campaign status, as the sending rule reads it", async () => {
    const [approved, reviewed, never] = [newUuid(), newUuid(), newUuid()];
    await apply([
      submitted(approved, 's1', 0),
      changed(approved, 's1', 'campaign', 'approved', 1),
      submitted(reviewed, 's2', 0),
      changed(reviewed, 's2', 'campaign', 'pending', 1),
    ]);
    const statuses = await campaignStatuses(infrastructure.db, [approved, reviewed, never]);
    expect(Object.fromEntries(statuses)).toEqual({ [approved]: 'approved', [reviewed]: 'pending' });
  });

  it('starts every step again on a new submission, and ignores late events of the one before', async () => {
    const account = newUuid();
    await apply([
      submitted(account, 's1', 0),
      created(account, 's1', 'customer_profile', 'BU1', 1),
      changed(account, 's1', 'customer_profile', 'failed', 2),
      submitted(account, 's2', 10),
      changed(account, 's1', 'brand', 'approved', 11),
      created(account, 's1', 'brand', 'BN1', 11),
    ]);
    expect(await rowOf(account)).toMatchObject({
      submission_id: 's2',
      submitted_at: new Date(Date.UTC(2026, 2, 2, 15, 10)),
      customer_profile_status: 'draft',
      customer_profile_reason: null,
      brand_status: 'draft',
      resources: {},
    });
  });
});
