import { createTwilioCarrierRegistration } from '@leadline/telephony';
import { accountEvents, eventually, startFakeTwilio, type FakeTwilio } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  businessProfile,
  CHECK_MS,
  RETRY_BASE_MS,
  startRegistrationSystem,
  statuses,
  type RegistrationSystem,
} from './harness';

const PRIMARY_PROFILE = `BU${'0'.repeat(32)}`;
let twilio: FakeTwilio;
let harness: RegistrationSystem;

beforeAll(async () => {
  twilio = await startFakeTwilio();
  harness = await startRegistrationSystem({
    twilio,
    carrier: (system) =>
      createTwilioCarrierRegistration({
        accountSid: twilio.accountSid,
        authToken: twilio.authToken,
        apiBaseUrl: twilio.baseUrl,
        publicUrl: system.publicUrl,
        primaryCustomerProfileId: PRIMARY_PROFILE,
        notificationEmail: 'compliance@acme-crm.example',
      }),
  });
  // Trust Hub's callbacks reach the API as Twilio would post them: to the URL we gave, signed.
  twilio.compliance.deliver = async (url, form, signature) => {
    const { pathname, search } = new URL(url);
    const response = await harness.system.app.inject({
      method: 'POST',
      url: pathname + search,
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature },
      payload: new URLSearchParams(form).toString(),
    });
    if (response.statusCode !== 204)
      throw new Error(`callback answered ${response.statusCode}: ${response.body}`);
  };
});
afterAll(async () => {
  await harness?.close();
  await twilio?.close();
});

async function newAccount(name: string) {
  const account = (await harness.acme.post('/accounts', { name, company_name: 'Sunrise Home Loans' })).body;
  return account as { id: string; phone_number: string };
}

/** Waits until the registration reads `expected`, step by step. */
const reaches = (accountId: string, expected: Record<string, string>) =>
  eventually(
    async () => {
      const registration = await harness.registration(accountId);
      return JSON.stringify(statuses(registration)) === JSON.stringify(expected) ? registration : undefined;
    },
    { timeoutMs: 30_000, message: `registration never reached ${JSON.stringify(expected)}` },
  );

describe('carrier registration through Twilio', () => {
  it('walks every step to approved: Trust Hub reviews by their callbacks, the brand and the campaign by looking again', async () => {
    const account = await newAccount('Sunrise Austin');
    const submitted = await harness.submit(account.id, businessProfile());
    expect(submitted.status).toBe(201);
    expect(submitted.body.profile.tax_id).toBe('XX-XXX6789');

    // The business profile is created, filled and submitted; Twilio reviews it.
    await reaches(account.id, {
      customer_profile: 'pending',
      brand: 'draft',
      campaign: 'draft',
      number: 'draft',
    });
    expect(twilio.compliance.customerProfiles).toHaveLength(1);
    const [profile] = twilio.compliance.customerProfiles;
    expect(profile!.status).toBe('pending-review');
    expect(profile!.statusCallback).toContain(`/twilio/registration?account_id=${account.id}`);
    const business = twilio.compliance.endUsers.find(
      (user) => user.type === 'customer_profile_business_information',
    );
    // The provider needs the whole tax id, and it gets it.
    expect(business!.attributes).toMatchObject({
      business_name: 'Sunrise Home Loans LLC',
      business_registration_identifier: 'EIN',
      business_registration_number: '12-3456789',
      business_type: 'Limited Liability Corporation',
      business_industry: 'FINANCIAL',
    });
    expect(profile!.assignments).toContain(PRIMARY_PROFILE);

    // Approved by Twilio's reviewers: its callback, not the clock, moves the registration on at once.
    await twilio.compliance.review(profile!.sid, 'twilio-approved');
    await reaches(account.id, {
      customer_profile: 'approved',
      brand: 'pending',
      campaign: 'draft',
      number: 'draft',
    });
    expect(twilio.compliance.trustProducts).toHaveLength(1);
    await twilio.compliance.review(twilio.compliance.trustProducts[0]!.sid, 'twilio-approved');
    const brandSid = await harness.recorded(account.id, 'brand');
    expect(twilio.compliance.brands.map((entry) => entry.sid)).toEqual([brandSid]);
    const [brand] = twilio.compliance.brands;

    // The brand is looked at again; a passing outage at Twilio is retried with backoff.
    twilio.compliance.setBrandStatus(brand!.sid, 'APPROVED');
    twilio.compliance.failNext(1);
    harness.clock.advance(CHECK_MS);
    const retry = await eventually(async () => {
      const work = await harness.system.services.db
        .selectFrom('carrier_registration_work')
        .select(['failures', 'last_error', 'due_at'])
        .where('account_id', '=', account.id)
        .executeTakeFirst();
      return work && work.failures > 0 ? work : undefined;
    });
    expect(retry).toMatchObject({ failures: 1, last_error: 'Service Unavailable' });
    // Backoff: half the first delay at least, at random up to all of it.
    expect(new Date(retry.due_at).getTime() - harness.clock.now().getTime()).toBe(RETRY_BASE_MS / 2);
    expect((await harness.registration(account.id)).steps.brand.status).toBe('pending');
    harness.clock.advance(RETRY_BASE_MS / 2);
    await reaches(account.id, {
      customer_profile: 'approved',
      brand: 'approved',
      campaign: 'pending',
      number: 'draft',
    });

    const [service] = twilio.compliance.services;
    const [campaign] = twilio.compliance.campaigns;
    expect(service!.useInboundWebhookOnNumber).toBe(true);
    expect(campaign).toMatchObject({
      messagingServiceSid: service!.sid,
      usecase: 'MIXED',
      directLending: true,
      messageSamples: businessProfile().sample_messages,
      optOutKeywords: expect.arrayContaining(['STOP', 'UNSUBSCRIBE']),
      optOutMessage: expect.stringMatching(/^Sunrise Home Loans: You are unsubscribed/),
      helpKeywords: ['HELP'],
    });

    twilio.compliance.setCampaignStatus(campaign!.sid, 'VERIFIED');
    harness.clock.advance(CHECK_MS);
    const approved = await reaches(account.id, {
      customer_profile: 'approved',
      brand: 'approved',
      campaign: 'approved',
      number: 'approved',
    });
    expect(approved.status).toBe('approved');
    const number = twilio.numbers.find((entry) => entry.phoneNumber === account.phone_number)!;
    expect(service!.phoneNumberSids).toEqual([number.sid]);

    // Every change is an event, in order; the tax id is on the log only sealed.
    const events = (await accountEvents(harness.system.services)).filter(
      (event) => event.account_id === account.id,
    );
    const changes = events
      .filter((event) => event.type === 'compliance.registration_step_changed')
      .map((event) => `${event.data.step}:${event.data.previous_status}->${event.data.status}`);
    expect(changes).toEqual([
      'customer_profile:draft->pending',
      'customer_profile:pending->approved',
      'brand:draft->pending',
      'brand:pending->approved',
      'campaign:draft->pending',
      'campaign:pending->approved',
      'number:draft->approved',
    ]);
    expect(JSON.stringify(events)).not.toContain('3456789');
    // Nothing is due any more: the worker is done with the account.
    harness.clock.advance(24 * 3600_000);
    expect(await harness.worker.work()).toBe(0);
  });

  it("fails the step with the carrier's reason, and takes a corrected profile again", async () => {
    const account = await newAccount('Sunrise Dallas');
    await harness.submit(account.id, businessProfile({ legal_name: 'Sunrise Home Loans Dallas' }));
    await reaches(account.id, {
      customer_profile: 'pending',
      brand: 'draft',
      campaign: 'draft',
      number: 'draft',
    });
    const before = await harness.submit(account.id, businessProfile({ legal_name: 'Sunrise Dallas LLC' }));
    expect(before.status).toBe(409);
    expect(before.body.code).toBe('registration_in_review');

    const profile = twilio.compliance.customerProfiles.at(-1)!;
    await twilio.compliance.review(profile.sid, 'twilio-approved');
    await reaches(account.id, {
      customer_profile: 'approved',
      brand: 'pending',
      campaign: 'draft',
      number: 'draft',
    });
    await twilio.compliance.review(twilio.compliance.trustProducts.at(-1)!.sid, 'twilio-approved');
    const brandSid = await harness.recorded(account.id, 'brand');
    twilio.compliance.setBrandStatus(
      brandSid,
      'FAILED',
      'The legal name does not match the records of the tax id.',
    );
    harness.clock.advance(CHECK_MS);
    const failed = await reaches(account.id, {
      customer_profile: 'approved',
      brand: 'failed',
      campaign: 'draft',
      number: 'draft',
    });
    expect(failed.status).toBe('failed');
    expect(failed.steps.brand.reason).toBe('The legal name does not match the records of the tax id.');

    // The partner corrects the legal name: every step starts again, with a new business profile.
    const corrected = await harness.submit(account.id, businessProfile({ legal_name: 'Sunrise Dallas LLC' }));
    expect(corrected.status).toBe(200);
    expect(statuses(corrected.body)).toEqual({
      customer_profile: 'draft',
      brand: 'draft',
      campaign: 'draft',
      number: 'draft',
    });
    await reaches(account.id, {
      customer_profile: 'pending',
      brand: 'draft',
      campaign: 'draft',
      number: 'draft',
    });
    expect(twilio.compliance.customerProfiles.at(-1)!.sid).not.toBe(profile.sid);
  });

  it('refuses a status callback Twilio did not sign, making nothing due', async () => {
    const account = await newAccount('Sunrise Waco');
    await harness.submit(account.id, businessProfile({ legal_name: 'Sunrise Home Loans Waco' }));
    await reaches(account.id, {
      customer_profile: 'pending',
      brand: 'draft',
      campaign: 'draft',
      number: 'draft',
    });
    const before = await harness.system.services.db
      .selectFrom('carrier_registration_work')
      .select(['submission_id', 'due_at'])
      .where('account_id', '=', account.id)
      .executeTakeFirstOrThrow();
    const forged = await harness.system.app.inject({
      method: 'POST',
      url: `/twilio/registration?account_id=${account.id}&submission_id=${before.submission_id}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': 'forged' },
      payload: new URLSearchParams({ BundleSid: 'BU0', Status: 'twilio-approved' }).toString(),
    });
    expect(forged.statusCode).toBe(403);
    expect(forged.json().code).toBe('invalid_signature');
    const after = await harness.system.services.db
      .selectFrom('carrier_registration_work')
      .select('due_at')
      .where('account_id', '=', account.id)
      .executeTakeFirstOrThrow();
    expect(after.due_at).toEqual(before.due_at);
  });

  it('recovers a lost callback by looking again', async () => {
    const account = await newAccount('Sunrise Houston');
    await harness.submit(account.id, businessProfile({ legal_name: 'Sunrise Home Loans Houston' }));
    await reaches(account.id, {
      customer_profile: 'pending',
      brand: 'draft',
      campaign: 'draft',
      number: 'draft',
    });
    const profile = twilio.compliance.customerProfiles.at(-1)!;
    twilio.compliance.dropCallbacks = true;
    try {
      await twilio.compliance.review(profile.sid, 'twilio-approved');
    } finally {
      twilio.compliance.dropCallbacks = false;
    }
    expect(twilio.compliance.callbacks.at(-1)).toMatchObject({
      delivered: false,
      form: { BundleSid: profile.sid },
    });
    // Without the callback nothing is due yet: the approval is not seen...
    expect(await harness.worker.work()).toBe(0);
    expect((await harness.registration(account.id)).steps.customer_profile.status).toBe('pending');
    // ...until the next look, which finds it.
    harness.clock.advance(CHECK_MS);
    await reaches(account.id, {
      customer_profile: 'approved',
      brand: 'pending',
      campaign: 'draft',
      number: 'draft',
    });
  });
});
