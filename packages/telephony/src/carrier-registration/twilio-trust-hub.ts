import type { CarrierVerdict, RegistrationProfile } from '@leadline/domain';
import type twilio from 'twilio';
import { CarrierRefusal, type RegistrationRequest, type Submitted } from './port';
import { reasonOf } from './twilio-errors';

/** Twilio's Trust Hub policy of a secondary customer profile (an ISV's customer's business). */
export const SECONDARY_CUSTOMER_PROFILE_POLICY = 'RNdfbf3fae0e1107f8aded0e7cead80bf5';
/** Twilio's Trust Hub policy of an A2P messaging profile (the trust product a brand is registered from). */
export const A2P_TRUST_PRODUCT_POLICY = 'RNb0d4771c2c98518d916a3d4cd70a8f8b';

/** What our side of Trust Hub needs to know to open a bundle for a customer. */
export interface TrustHubSettings {
  /** Where Trust Hub posts status callbacks: `{publicUrl}/twilio/registration`. */
  publicUrl: string;
  /** Our own primary customer profile (Trust Hub, `BU…`), approved, which every customer profile is tied to. */
  primaryCustomerProfileId: string;
  /** Our address Trust Hub writes to about each profile's review (not the customer's). */
  notificationEmail: string;
}

/**
 * Where Trust Hub posts a profile's status changes. It names our account and submission (the
 * signature covers the URL), so the callback needs nothing else to find what changed.
 */
export const registrationCallbackUrl = (publicUrl: string, accountId: string, submissionId: string) =>
  `${publicUrl.replace(/\/$/, '')}/twilio/registration?account_id=${encodeURIComponent(accountId)}` +
  `&submission_id=${encodeURIComponent(submissionId)}`;

type TrustHub = twilio.Twilio['trusthub']['v1'];

interface Bundle {
  sid: string;
  status: string;
  errors: unknown;
}

/**
 * Trust Hub's two kinds of bundle (a customer profile, a trust product) go through the same review;
 * what differs is where each lives in the API, the policy it is evaluated against and what a
 * verdict's reason calls it.
 */
export interface BundleKind {
  what: string;
  policySid: string;
  list(friendlyName: string): Promise<Bundle[]>;
  create(params: {
    friendlyName: string;
    email: string;
    policySid: string;
    statusCallback: string;
  }): Promise<Bundle>;
  assign(bundleSid: string, objectSid: string): Promise<unknown>;
  evaluate(bundleSid: string): Promise<{ status: string; results: unknown }>;
  submit(bundleSid: string): Promise<Bundle>;
  fetch(bundleSid: string): Promise<Bundle>;
}

export const customerProfileBundles = (trusthub: TrustHub): BundleKind => ({
  what: 'business profile',
  policySid: SECONDARY_CUSTOMER_PROFILE_POLICY,
  list: (friendlyName) => trusthub.customerProfiles.list({ friendlyName, limit: 20 }),
  create: (params) => trusthub.customerProfiles.create(params),
  assign: (sid, objectSid) =>
    trusthub.customerProfiles(sid).customerProfilesEntityAssignments.create({ objectSid }),
  evaluate: (sid) =>
    trusthub
      .customerProfiles(sid)
      .customerProfilesEvaluations.create({ policySid: SECONDARY_CUSTOMER_PROFILE_POLICY }),
  submit: (sid) => trusthub.customerProfiles(sid).update({ status: 'pending-review' }),
  fetch: (sid) => trusthub.customerProfiles(sid).fetch(),
});

export const trustProductBundles = (trusthub: TrustHub): BundleKind => ({
  what: 'messaging profile',
  policySid: A2P_TRUST_PRODUCT_POLICY,
  list: (friendlyName) => trusthub.trustProducts.list({ friendlyName, limit: 20 }),
  create: (params) => trusthub.trustProducts.create(params),
  assign: (sid, objectSid) =>
    trusthub.trustProducts(sid).trustProductsEntityAssignments.create({ objectSid }),
  evaluate: (sid) =>
    trusthub.trustProducts(sid).trustProductsEvaluations.create({ policySid: A2P_TRUST_PRODUCT_POLICY }),
  submit: (sid) => trusthub.trustProducts(sid).update({ status: 'pending-review' }),
  fetch: (sid) => trusthub.trustProducts(sid).fetch(),
});

/** How a bundle's review stands now. */
export async function bundleStatus(kind: BundleKind, id: string): Promise<CarrierVerdict> {
  return bundleVerdict(await kind.fetch(id), kind.what);
}

/**
 * The business's customer profile: its business information, authorized representative and address
 * (as a supporting document), tied to our primary profile, then evaluated and submitted for review.
 */
export function submitCustomerProfile(
  client: twilio.Twilio,
  settings: TrustHubSettings,
  request: RegistrationRequest,
): Promise<Submitted> {
  const { profile, submissionId } = request;
  const name = `customer profile ${submissionId}`;
  const trusthub = client.trusthub.v1;
  return submitBundle(customerProfileBundles(trusthub), name, settings, request, async (assign) => {
    await assign(
      await createEndUser(
        trusthub,
        `${name} business`,
        'customer_profile_business_information',
        businessInformation(profile, request.taxId),
      ),
    );
    await assign(
      await createEndUser(
        trusthub,
        `${name} representative`,
        'authorized_representative_1',
        authorizedRepresentative(profile.contact),
      ),
    );
    await assign(await createAddressDocument(client, `${name} address`, profile));
    await assign(settings.primaryCustomerProfileId);
  });
}

/** The A2P messaging profile (trust product) over an approved customer profile, submitted for review. */
export function submitTrustProduct(
  client: twilio.Twilio,
  settings: TrustHubSettings,
  request: RegistrationRequest & { customerProfileId: string },
): Promise<Submitted> {
  const { profile, submissionId } = request;
  const name = `a2p profile ${submissionId}`;
  const trusthub = client.trusthub.v1;
  return submitBundle(trustProductBundles(trusthub), name, settings, request, async (assign) => {
    await assign(
      await createEndUser(trusthub, `${name} information`, 'us_a2p_messaging_profile_information', {
        company_type: profile.business_type === 'non_profit' ? 'non_profit' : 'private',
        brand_contact_email: profile.contact.email,
      }),
    );
    await assign(request.customerProfileId);
  });
}

/**
 * A bundle's way through Trust Hub: created (with a callback for its review), filled with what its
 * policy requires, evaluated against that policy (what is missing is refused here, with Twilio's
 * words, rather than after days of review) and submitted. The bundle is named after the submission
 * (`name`), so a retry after a crash finds what the first attempt made.
 */
async function submitBundle(
  kind: BundleKind,
  name: string,
  settings: TrustHubSettings,
  request: Pick<RegistrationRequest, 'accountId' | 'submissionId'>,
  fill: (assign: (objectSid: string) => Promise<unknown>) => Promise<void>,
): Promise<Submitted> {
  // A bundle submitted before a crash is the one; one left in draft was never completed.
  const [existing] = await kind.list(name);
  if (existing && existing.status !== 'draft')
    return { id: existing.sid, verdict: bundleVerdict(existing, kind.what) };
  const bundle = await kind.create({
    friendlyName: name,
    email: settings.notificationEmail,
    policySid: kind.policySid,
    statusCallback: registrationCallbackUrl(settings.publicUrl, request.accountId, request.submissionId),
  });
  await fill((objectSid) => kind.assign(bundle.sid, objectSid));
  const evaluation = await kind.evaluate(bundle.sid);
  if (evaluation.status !== 'compliant')
    throw new CarrierRefusal(evaluationFailures(evaluation.results), 'twilio_evaluation_noncompliant');
  const submitted = await kind.submit(bundle.sid);
  return { id: bundle.sid, verdict: bundleVerdict(submitted, kind.what) };
}

/** An end user (a set of attributes of one type) to assign to a bundle; its sid. */
async function createEndUser(
  trusthub: TrustHub,
  name: string,
  type: string,
  attributes: Record<string, unknown>,
): Promise<string> {
  const user = await trusthub.endUsers.create({ friendlyName: name, type, attributes });
  return user.sid;
}

/**
 * The business's address: Trust Hub takes it as a supporting document that points at an address
 * created in the account's address book. Its sid.
 */
async function createAddressDocument(
  client: twilio.Twilio,
  name: string,
  profile: RegistrationProfile,
): Promise<string> {
  const { address } = profile;
  const created = await client.addresses.create({
    customerName: profile.legal_name,
    street: address.street,
    ...(address.street_secondary && { streetSecondary: address.street_secondary }),
    city: address.city,
    region: address.region,
    postalCode: address.postal_code,
    isoCountry: address.country,
  });
  const document = await client.trusthub.v1.supportingDocuments.create({
    friendlyName: name,
    type: 'customer_profile_address',
    attributes: { address_sids: created.sid },
  });
  return document.sid;
}

const businessTypes: Record<RegistrationProfile['business_type'], string> = {
  sole_proprietorship: 'Sole Proprietorship',
  partnership: 'Partnership',
  llc: 'Limited Liability Corporation',
  corporation: 'Corporation',
  co_operative: 'Co-operative',
  non_profit: 'Non-profit Corporation',
};

const jobPositions: Record<RegistrationProfile['contact']['job_position'], string> = {
  director: 'Director',
  gm: 'GM',
  vp: 'VP',
  ceo: 'CEO',
  cfo: 'CFO',
  general_counsel: 'General Counsel',
  other: 'Other',
};

/** The business as Trust Hub's `customer_profile_business_information` wants it. */
function businessInformation(profile: RegistrationProfile, taxId: string) {
  return {
    business_name: profile.legal_name,
    business_identity: 'direct_customer',
    business_type: businessTypes[profile.business_type],
    business_industry: profile.vertical.toUpperCase(),
    business_registration_identifier: 'EIN',
    business_registration_number: taxId,
    business_regions_of_operation: 'USA_AND_CANADA',
    website_url: profile.website,
    social_media_profile_urls: '',
  };
}

/** The contact as Trust Hub's `authorized_representative_1` wants it. */
function authorizedRepresentative(contact: RegistrationProfile['contact']) {
  return {
    first_name: contact.first_name,
    last_name: contact.last_name,
    email: contact.email,
    phone_number: contact.phone,
    business_title: contact.title,
    job_position: jobPositions[contact.job_position],
  };
}

/** A Trust Hub bundle's review: `twilio-rejected` carries Twilio's reasons in `errors`. */
function bundleVerdict(bundle: Bundle, what: string): CarrierVerdict {
  if (bundle.status === 'twilio-approved') return { status: 'approved' };
  if (bundle.status === 'twilio-rejected')
    return { status: 'failed', reason: reasonOf(bundle.errors, `Twilio rejected the ${what}.`) };
  return { status: 'pending' };
}

/** What an evaluation found missing or wrong, as one sentence per unmet requirement. */
function evaluationFailures(results: unknown): string {
  const failed = (Array.isArray(results) ? results : []).filter(
    (result: { passed?: boolean }) => result?.passed === false,
  ) as {
    requirement_friendly_name?: string;
    failure_reason?: string;
    invalid?: { failure_reason?: string }[];
  }[];
  const sentences = failed.map((result) => {
    const details = (result.invalid ?? []).map((invalid) => invalid.failure_reason).filter(Boolean);
    const reason = details.length > 0 ? details.join('; ') : (result.failure_reason ?? 'not met');
    return `${result.requirement_friendly_name ?? 'A requirement'}: ${reason}.`;
  });
  return sentences.join(' ') || 'The profile does not meet the registration policy.';
}
