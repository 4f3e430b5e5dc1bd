import type { CarrierVerdict } from '@leadline/domain';
import { createDb, newUuid, type Clock } from '@leadline/runtime';
import type { CarrierRegistration, Submitted } from './port';

type SimulatedResource = 'customer_profile' | 'trust_product' | 'brand' | 'campaign';

/**
 * How a demo (or a test) makes the simulated carriers refuse a step: by a marker in the business's
 * legal name. `FAIL PROFILE` fails the business profile, `FAIL CAMPAIGN` the campaign, and `FAIL`
 * alone the brand (the step real registrations fail most, on a name that does not match the tax id).
 * Markers are upper case words, so "Failsafe Lending" registers as any other name.
 */
export function simulatedFailure(
  legalName: string,
): { resource: SimulatedResource; reason: string } | undefined {
  if (/\bFAIL PROFILE\b/.test(legalName))
    return {
      resource: 'customer_profile',
      reason: 'The business address could not be verified (simulated).',
    };
  if (/\bFAIL CAMPAIGN\b/.test(legalName))
    return {
      resource: 'campaign',
      reason: 'The sample messages do not say how to opt out (simulated).',
    };
  if (/\bFAIL\b/.test(legalName))
    return {
      resource: 'brand',
      reason: 'The legal name and the tax id do not match the registry of businesses (simulated).',
    };
  return undefined;
}

export interface LocalRegistrationOptions {
  databaseUrl: string;
  clock: Clock;
  /** How long after its submission each review is decided (0: at once). */
  decisionDelayMs: number;
}

/**
 * The registration without a telephony provider: every submission is recorded with the moment its
 * review is decided, approved then unless the legal name asks for a failure (see simulatedFailure). A
 * demo and the tests walk every state with it: draft, pending for `decisionDelayMs`, then approved or
 * failed with a reason. Nothing leaves the machine. Like a remote provider, it keeps its own state
 * (`local_carrier_registrations`) on its own connection.
 */
export function createLocalCarrierRegistration(
  options: LocalRegistrationOptions,
): CarrierRegistration & { close(): Promise<void> } {
  const db = createDb(options.databaseUrl, { maxConnections: 1 });

  async function submit(resource: SimulatedResource, legalName: string): Promise<Submitted> {
    const failure = simulatedFailure(legalName);
    const fails = failure?.resource === resource;
    const now = options.clock.now();
    const id = `local-${resource.replaceAll('_', '-')}-${newUuid()}`;
    await db
      .insertInto('local_carrier_registrations')
      .values({
        id,
        resource,
        decided_at: new Date(now.getTime() + options.decisionDelayMs),
        outcome: fails ? 'failed' : 'approved',
        reason: fails ? failure.reason : null,
        created_at: now,
      })
      .execute();
    return { id, verdict: await status(id) };
  }

  async function status(id: string): Promise<CarrierVerdict> {
    const row = await db
      .selectFrom('local_carrier_registrations')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst();
    if (!row) return { status: 'failed', reason: 'The simulated registration is unknown.' };
    if (options.clock.now() < row.decided_at) return { status: 'pending' };
    return row.outcome === 'failed'
      ? { status: 'failed', reason: row.reason ?? 'Refused.' }
      : { status: 'approved' };
  }

  return {
    close: () => db.destroy(),
    submitCustomerProfile: (request) => submit('customer_profile', request.profile.legal_name),
    customerProfileStatus: status,
    submitTrustProduct: (request) => submit('trust_product', request.profile.legal_name),
    trustProductStatus: status,
    registerBrand: (request) => submit('brand', request.profile.legal_name),
    brandStatus: status,
    createMessagingService: async () => ({ id: `local-messaging-service-${newUuid()}` }),
    registerCampaign: (request) => submit('campaign', request.profile.legal_name),
    campaignStatus: (request) => status(request.campaignId),
    attachNumber: async (request) => ({ id: request.phoneNumber, verdict: { status: 'approved' } }),
  };
}
