import { createLocalCarrierRegistration } from '@leadline/telephony';
import { accountEvents, eventually } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  businessProfile,
  CHECK_MS,
  startRegistrationSystem,
  statuses,
  type RegistrationSystem,
} from './harness';

const REVIEW_MS = 5 * 60_000;
let harness: RegistrationSystem;
let local: ReturnType<typeof createLocalCarrierRegistration>;

beforeAll(async () => {
  harness = await startRegistrationSystem({
    carrier: (system, clock) => {
      local = createLocalCarrierRegistration({
        databaseUrl: system.env.config.DATABASE_URL,
        clock,
        decisionDelayMs: REVIEW_MS,
      });
      return local;
    },
  });
});
afterAll(async () => {
  await harness?.close();
  await local?.close();
});

/** Waits until the worker has nothing to do before the clock moves: nothing due, nothing leased. */
const idle = (accountIds: string[]) =>
  eventually(
    async () => {
      const busy = await harness.system.services.db
        .selectFrom('carrier_registration_work')
        .select('account_id')
        .where('account_id', 'in', accountIds)
        .where((eb) => eb.or([eb('due_at', '<=', harness.clock.now()), eb('lease_until', 'is not', null)]))
        .execute();
      return busy.length === 0 ? true : undefined;
    },
    { message: 'the worker never went idle' },
  );

describe('the local simulation of carrier registration', () => {
  it('walks every step through draft and pending to approved, or to failed for a name marked so', async () => {
    const names = {
      approved: 'Sunrise Home Loans LLC',
      brand: 'Sunrise Lending FAIL',
      profile: 'Sunrise Lending FAIL PROFILE',
      campaign: 'Sunrise Lending FAIL CAMPAIGN',
    };
    const accounts: Record<string, string> = {};
    for (const [outcome, legalName] of Object.entries(names)) {
      const account = (await harness.acme.post('/accounts', { name: legalName })).body;
      accounts[outcome] = account.id;
      const submitted = await harness.submit(account.id, businessProfile({ legal_name: legalName }));
      expect(submitted.status).toBe(201);
      expect(submitted.body.status).toBe('draft');
      expect(statuses(submitted.body)).toEqual({
        customer_profile: 'draft',
        brand: 'draft',
        campaign: 'draft',
        number: 'draft',
      });
    }
    const ids = Object.values(accounts);
    const finished = (registration: { status: string }) =>
      ['approved', 'failed'].includes(registration.status);
    for (let looks = 0; looks < 60; looks++) {
      await idle(ids);
      const all = await Promise.all(ids.map((id) => harness.registration(id)));
      if (all.every(finished)) break;
      harness.clock.advance(CHECK_MS);
    }

    const approved = await harness.registration(accounts.approved!);
    expect(approved.status).toBe('approved');
    const brand = await harness.registration(accounts.brand!);
    expect(statuses(brand)).toEqual({
      customer_profile: 'approved',
      brand: 'failed',
      campaign: 'draft',
      number: 'draft',
    });
    expect(brand.steps.brand.reason).toMatch(/do not match .*\(simulated\)/);
    const profile = await harness.registration(accounts.profile!);
    expect(statuses(profile)).toEqual({
      customer_profile: 'failed',
      brand: 'draft',
      campaign: 'draft',
      number: 'draft',
    });
    expect(profile.steps.customer_profile.reason).toMatch(/\(simulated\)/);
    const campaign = await harness.registration(accounts.campaign!);
    expect(statuses(campaign)).toEqual({
      customer_profile: 'approved',
      brand: 'approved',
      campaign: 'failed',
      number: 'draft',
    });
    expect(campaign.steps.campaign.reason).toMatch(/opt out \(simulated\)/);

    // Each step was pending for the review's time before it was decided: every state was walked.
    const events = await accountEvents(harness.system.services);
    const changes = (accountId: string) =>
      events
        .filter(
          (event) => event.account_id === accountId && event.type === 'compliance.registration_step_changed',
        )
        .map((event) => {
          const data = event.data as { step: string; previous_status: string; status: string };
          return `${data.step}:${data.previous_status}->${data.status}`;
        });
    expect(changes(accounts.approved!)).toEqual([
      'customer_profile:draft->pending',
      'customer_profile:pending->approved',
      'brand:draft->pending',
      'brand:pending->approved',
      'campaign:draft->pending',
      'campaign:pending->approved',
      'number:draft->approved',
    ]);
    expect(changes(accounts.campaign!).at(-1)).toBe('campaign:pending->failed');
    const pendingFor = (accountId: string, step: string) => {
      const times = events
        .filter(
          (event) =>
            event.account_id === accountId &&
            event.type === 'compliance.registration_step_changed' &&
            event.data.step === step,
        )
        .map((event) => new Date(event.occurred_at).getTime());
      return times[1]! - times[0]!;
    };
    expect(pendingFor(accounts.approved!, 'customer_profile')).toBeGreaterThanOrEqual(REVIEW_MS);
  });
});
