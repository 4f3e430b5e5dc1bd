import { accountEvents, fakeClock, logSize } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../src/app';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

const clock = fakeClock();
let system: TestSystem;
let acme: PartnerClient;
let acmeKey: string;
let otherKey: string;

beforeAll(async () => {
  system = await startSystem({ clock });
  acmeKey = await system.createPartner('Acme CRM');
  otherKey = await system.createPartner('Other CRM');
  acme = partnerClient(system.app, acmeKey);
});
afterAll(() => system?.close());

const profile = (overrides: Record<string, unknown> = {}) => ({
  legal_name: 'Sunrise Home Loans LLC',
  tax_id: '271048576',
  business_type: 'llc',
  vertical: 'financial',
  website: 'https://sunrisehomeloans.example',
  address: { street: '100 Congress Ave', city: 'Austin', region: 'TX', postal_code: '78701' },
  contact: {
    first_name: 'Dana',
    last_name: 'Reyes',
    title: 'Compliance officer',
    job_position: 'director',
    email: 'dana@sunrisehomeloans.example',
    phone: '512-555-0100',
  },
  use_case_description: 'Follow-up with mortgage applicants about their application and its documents.',
  sample_messages: [
    'Hi Ana, Sunrise Home Loans here: please upload your W-2 at https://sunrise.example/u. Reply STOP to opt out.',
    'Sunrise Home Loans: your pre-approval letter is ready. Reply HELP for help, STOP to opt out.',
  ],
  message_flow:
    'Applicants tick an SMS consent box on the loan application at sunrisehomeloans.example/apply.',
  ...overrides,
});

async function registrationCall(
  method: 'GET' | 'PUT',
  accountId: string,
  body?: unknown,
  key = acmeKey,
  app: App = system.app,
) {
  const response = await app.inject({
    method,
    url: `/v1/accounts/${accountId}/compliance/registration`,
    headers: { 'x-partner-key': key },
    ...(body !== undefined && { payload: body as object }),
  });
  return {
    status: response.statusCode,
    headers: response.headers,
    text: response.body,
    body: response.json(),
  };
}

const newAccount = async () => (await acme.post('/accounts', { name: 'Sunrise Austin' })).body.id as string;

describe('the carrier registration routes', () => {
  it('answers every step as a draft before anything was submitted', async () => {
    const account = await newAccount();
    const { status, body } = await registrationCall('GET', account);
    expect(status).toBe(200);
    expect(body).toEqual({
      account_id: account,
      status: 'draft',
      submitted_at: null,
      updated_at: null,
      profile: null,
      steps: {
        customer_profile: { status: 'draft', reason: null, updated_at: null },
        brand: { status: 'draft', reason: null, updated_at: null },
        campaign: { status: 'draft', reason: null, updated_at: null },
        number: { status: 'draft', reason: null, updated_at: null },
      },
    });
  });

  it('takes a submission once, never answers the whole tax id, and refuses another while it is reviewed', async () => {
    const account = await newAccount();
    const submitted = await registrationCall('PUT', account, profile());
    expect(submitted.status).toBe(201);
    expect(submitted.body).toMatchObject({
      status: 'draft',
      submitted_at: clock.now().toISOString(),
      profile: {
        legal_name: 'Sunrise Home Loans LLC',
        tax_id: 'XX-XXX8576',
        address: { street_secondary: null, country: 'US' },
        contact: { phone: '+15125550100' },
        use_case: 'mixed',
        opt_in_keywords: [],
        opt_in_message: null,
        direct_lending: false,
        // Read from the samples: the first carries a link, none a phone number.
        has_embedded_links: true,
        has_embedded_phone: false,
      },
    });
    expect(submitted.text).not.toContain('1048576');
    expect((await registrationCall('GET', account)).text).not.toContain('1048576');

    // Idempotent: the same profile again (the tax id written another way) appends nothing.
    const size = await logSize(system.services);
    const again = await registrationCall('PUT', account, profile({ tax_id: '27-1048576' }));
    expect(again.status).toBe(200);
    expect(again.body.submitted_at).toBe(submitted.body.submitted_at);
    expect(await logSize(system.services)).toBe(size);

    const changed = await registrationCall('PUT', account, profile({ website: 'https://sunrise.example' }));
    expect(changed.status).toBe(409);
    expect(changed.headers['content-type']).toContain('application/problem+json');
    expect(changed.body.code).toBe('registration_in_review');
    expect(await logSize(system.services)).toBe(size);

    // On the log the tax id is sealed; the worker's queue has the submission.
    const events = (await accountEvents(system.services)).filter((event) => event.account_id === account);
    expect(events.map((event) => event.type)).toContain('compliance.registration_submitted');
    expect(JSON.stringify(events)).not.toContain('1048576');
    const work = await system.services.db
      .selectFrom('carrier_registration_work')
      .selectAll()
      .where('account_id', '=', account)
      .executeTakeFirst();
    expect(work).toMatchObject({ due_at: clock.now(), lease_until: null });
  });

  it('refuses bad input with a problem naming each field, writing nothing', async () => {
    const account = await newAccount();
    const size = await logSize(system.services);
    const cases: [Record<string, unknown>, string[]][] = [
      [profile({ tax_id: '12-345' }), ['body.tax_id']],
      [profile({ sample_messages: ['Only one sample message, long enough.'] }), ['body.sample_messages']],
      [
        profile({ sample_messages: ['Too short', 'Sunrise Home Loans: a long enough sample message.'] }),
        ['body.sample_messages.0'],
      ],
      [profile({ use_case_description: 'Too short.' }), ['body.use_case_description']],
      [profile({ opt_in_keywords: ['JOIN'] }), ['body.opt_in_message']],
      [
        profile({
          opt_in_keywords: ['JOIN NOW'],
          opt_in_message: 'Sunrise Home Loans: you are in. Reply STOP to opt out.',
        }),
        ['body.opt_in_keywords.0'],
      ],
      [profile({ business_type: 'trust' }), ['body.business_type']],
      [profile({ website: 'ftp://sunrise.example' }), ['body.website']],
      [profile({ contact: { ...profile().contact, phone: 'call me' } }), ['body.contact.phone']],
      [profile({ ein: '12-3456789' }), ['body.ein']],
      [{ legal_name: 'Sunrise' }, ['body.tax_id', 'body.business_type', 'body.vertical', 'body.website']],
    ];
    for (const [body, fields] of cases) {
      const answer = await registrationCall('PUT', account, body);
      expect({ status: answer.status, type: answer.headers['content-type'] }).toEqual({
        status: 400,
        type: expect.stringContaining('application/problem+json'),
      });
      expect(answer.body.code).toBe('validation_failed');
      expect(answer.body.errors.map((error: { field: string }) => error.field)).toEqual(
        expect.arrayContaining(fields),
      );
      expect(answer.text).not.toContain('1048576');
    }
    expect(await logSize(system.services)).toBe(size);
    expect((await registrationCall('GET', account)).body.status).toBe('draft');
  });

  it("answers another partner's account as a 404, for reading and for submitting", async () => {
    const account = await newAccount();
    await registrationCall('PUT', account, profile());
    const size = await logSize(system.services);
    for (const method of ['GET', 'PUT'] as const) {
      const answer = await registrationCall(
        method,
        account,
        method === 'PUT' ? profile() : undefined,
        otherKey,
      );
      expect(answer.status).toBe(404);
      expect(answer.body.code).toBe('account_not_found');
      expect(answer.text).not.toContain('Sunrise');
    }
    expect(await logSize(system.services)).toBe(size);
  });

  it('lets a dashboard member read the registration but not submit it', async () => {
    const account = await newAccount();
    await registrationCall('PUT', account, profile());
    const token = (await acme.post(`/accounts/${account}/embed-token`, { user_role: 'member' })).body.token;
    const embed = (method: 'GET' | 'PUT') =>
      system.app.inject({
        method,
        url: `/embed/api/accounts/${account}/compliance/registration`,
        headers: { authorization: `Bearer ${token}` },
        ...(method === 'PUT' && { payload: profile() }),
      });
    const read = await embed('GET');
    expect(read.statusCode).toBe(200);
    expect(read.json().profile.tax_id).toBe('XX-XXX8576');
    const write = await embed('PUT');
    expect(write.statusCode).toBe(403);
    expect(write.json().code).toBe('embed_role_forbidden');
  });

  it('keeps the tax id out of the request logs', async () => {
    const lines: string[] = [];
    const app = await system.appWith({
      logger: { level: 'debug', stream: { write: (line: string) => void lines.push(line) } },
    });
    const account = await newAccount();
    await registrationCall('PUT', account, profile({ tax_id: 'x12345678' }), acmeKey, app);
    await registrationCall('PUT', account, profile(), acmeKey, app);
    await registrationCall('PUT', account, profile({ legal_name: 'Other' }), acmeKey, app);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('')).not.toMatch(/1048576|12345678/);
  });
});
