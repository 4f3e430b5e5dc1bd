import { createDb, createSecretBox, DEVELOPMENT_WEBHOOK_KEY, type Database } from '@leadline/runtime';
import type { CarrierRegistration } from '@leadline/telephony';
import { eventually, fakeClock, type FakeClock, type FakeTwilio } from '@leadline/test-kit';
import type { Kysely } from 'kysely';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';
import { startRegistrationWorker, type RunningRegistrationWorker } from '../src';

/** A lender's business profile, as a partner submits it. */
export function businessProfile(overrides: Record<string, unknown> = {}) {
  return {
    legal_name: 'Sunrise Home Loans LLC',
    tax_id: '12-3456789',
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
      phone: '+15125550100',
    },
    use_case: 'mixed',
    use_case_description:
      'Follow-up with mortgage applicants about their loan application and the documents it needs.',
    sample_messages: [
      'Hi Ana, this is Sunrise Home Loans: could you send us your latest W-2? Reply STOP to opt out.',
      'Sunrise Home Loans: your pre-approval letter is ready. Reply HELP for help, STOP to opt out.',
    ],
    message_flow:
      'Applicants tick an SMS consent box on the loan application form at sunrisehomeloans.example/apply.',
    direct_lending: true,
    ...overrides,
  };
}

export interface RegistrationSystem {
  system: TestSystem;
  clock: FakeClock;
  partnerKey: string;
  acme: PartnerClient;
  worker: RunningRegistrationWorker;
  /** PUT of the registration, as the partner. */
  submit(accountId: string, body: unknown, key?: string): Promise<{ status: number; body: any }>; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** GET of the registration, as the partner. */
  registration(accountId: string): Promise<any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  /**
   * Waits until the worker recorded that it created `resource` at the provider (what the provider
   * holds is there a moment before): the next look is scheduled from then.
   */
  recorded(accountId: string, resource: string): Promise<string>;
  close(): Promise<void>;
}

export const CHECK_MS = 60_000;
export const RETRY_BASE_MS = 10_000;

/**
 * The command API, projector and SMS path of the test system (with the fake Twilio when given), and a
 * registration worker over `carrier` on a fake clock, looking for due work every 50 ms: reviews are
 * looked at every CHECK_MS of the fake clock at first, so a test moves the clock to make a look due.
 */
export async function startRegistrationSystem(options: {
  carrier: (system: TestSystem, clock: FakeClock) => CarrierRegistration;
  twilio?: FakeTwilio;
}): Promise<RegistrationSystem> {
  const clock = fakeClock(new Date('2026-03-02T15:00:00Z'));
  const system = await startSystem({ clock, ...(options.twilio && { twilio: options.twilio }) });
  const partnerKey = await system.createPartner('Acme CRM');
  const acme = partnerClient(system.app, partnerKey);
  const workerDb: Kysely<Database> = createDb(system.env.config.DATABASE_URL, { maxConnections: 4 });
  const worker = startRegistrationWorker({
    db: workerDb,
    commands: system.services.commands,
    carrier: options.carrier(system, clock),
    secrets: createSecretBox(DEVELOPMENT_WEBHOOK_KEY),
    clock,
    random: () => 0,
    checkSchedule: { minMs: CHECK_MS, maxMs: 3_600_000 },
    retrySchedule: { baseMs: RETRY_BASE_MS, maxMs: 600_000 },
    callTimeoutMs: 30_000,
    pollIntervalMs: 50,
    onError: (error) => console.error(error),
  });
  const call = async (method: 'GET' | 'PUT', accountId: string, body?: unknown, key = partnerKey) => {
    const response = await system.app.inject({
      method,
      url: `/v1/accounts/${accountId}/compliance/registration`,
      headers: { 'x-partner-key': key },
      ...(body !== undefined && { payload: body as object }),
    });
    return { status: response.statusCode, body: response.json() };
  };
  return {
    system,
    clock,
    partnerKey,
    acme,
    worker,
    submit: (accountId, body, key) => call('PUT', accountId, body, key),
    registration: async (accountId) => (await call('GET', accountId)).body,
    recorded: (accountId, resource) =>
      eventually(
        async () => {
          const row = await system.services.db
            .selectFrom('carrier_registrations')
            .select('resources')
            .where('account_id', '=', accountId)
            .executeTakeFirst();
          return (row?.resources as Record<string, string> | undefined)?.[resource];
        },
        { message: `the ${resource} was never recorded` },
      ),
    async close() {
      await worker.stop();
      await workerDb.destroy();
      await system.close();
    },
  };
}

/** The status of each step, in order: what a partner reads first. */
export const statuses = (registration: { steps: Record<string, { status: string }> }) =>
  Object.fromEntries(Object.entries(registration.steps).map(([step, { status }]) => [step, status]));
