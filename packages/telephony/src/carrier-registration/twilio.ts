import type { CarrierVerdict, RegistrationProfile } from '@leadline/domain';
import twilio from 'twilio';
import { twilioClient, type TwilioOptions } from '../twilio';
import { CarrierRefusal, type CarrierRegistration } from './port';

/** Twilio's Trust Hub policy of a secondary customer profile (an ISV's customer's business). */
export const SECONDARY_CUSTOMER_PROFILE_POLICY = 'RNdfbf3fae0e1107f8aded0e7cead80bf5';
/** Twilio's Trust Hub policy of an A2P messaging profile (the trust product a brand is registered from). */
export const A2P_TRUST_PRODUCT_POLICY = 'RNb0d4771c2c98518d916a3d4cd70a8f8b';

export interface TwilioRegistrationOptions extends Pick<
  TwilioOptions,
  'accountSid' | 'authToken' | 'apiBaseUrl'
> {
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

/** Twilio's 4xx answers are the request's own fault: repeating it would fail the same way. */
const isRefusal = (error: unknown): error is twilio.RestException =>
  error instanceof twilio.RestException && error.status >= 400 && error.status < 500 && error.status !== 429;

async function refusalsAsCarrierRefusal<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (isRefusal(error)) throw new CarrierRefusal(error.message, `twilio_${error.code ?? error.status}`);
    throw error;
  }
}

/** The words of Twilio's error entries (`errors` of a profile, a brand or a campaign), joined. */
function reasonOf(errors: unknown, fallback: string): string {
  if (!Array.isArray(errors) || errors.length === 0) return fallback;
  const words = errors.map((entry: unknown) => {
    if (typeof entry === 'string') return entry;
    const record = (entry ?? {}) as Record<string, unknown>;
    const text = record.description ?? record.message ?? record.failure_reason ?? record.code;
    return typeof text === 'string' || typeof text === 'number' ? String(text) : JSON.stringify(record);
  });
  return words.join(' ');
}

/** A Trust Hub bundle's review: `twilio-rejected` carries Twilio's reasons in `errors`. */
function bundleVerdict(status: string, errors: unknown, what: string): CarrierVerdict {
  if (status === 'twilio-approved') return { status: 'approved' };
  if (status === 'twilio-rejected')
    return { status: 'failed', reason: reasonOf(errors, `Twilio rejected the ${what}.`) };
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

/**
 * Twilio's A2P 10DLC onboarding for ISVs, step by step as Twilio's guide has it: a secondary customer
 * profile (business information, authorized representative, address as a supporting document, tied to
 * our primary profile, evaluated, submitted); an A2P trust product over it; a brand registration; a
 * messaging service; a US A2P campaign on it; the number added to the service. Trust Hub reviews call
 * back (`statusCallback`); brands and campaigns are looked at again (Twilio calls back for those only
 * through Event Streams).
 */
export function createTwilioCarrierRegistration(options: TwilioRegistrationOptions): CarrierRegistration {
  const client = twilioClient({ ...options, publicUrl: options.publicUrl });
  const trusthub = client.trusthub.v1;
  const messaging = client.messaging.v1;
  // Named after the submission, so a retry after a crash finds what the first attempt made.
  const profileName = (submissionId: string) => `customer profile ${submissionId}`;
  const trustProductName = (submissionId: string) => `a2p profile ${submissionId}`;

  async function createEndUser(name: string, type: string, attributes: Record<string, unknown>) {
    return trusthub.endUsers.create({ friendlyName: name, type, attributes });
  }

  return {
    submitCustomerProfile: (request) =>
      refusalsAsCarrierRefusal(async () => {
        const { profile, submissionId } = request;
        const name = profileName(submissionId);
        // A profile submitted before a crash is the one; one left in draft was never completed.
        const [existing] = await trusthub.customerProfiles.list({ friendlyName: name, limit: 20 });
        if (existing && existing.status !== 'draft')
          return {
            id: existing.sid,
            verdict: bundleVerdict(existing.status, existing.errors, 'business profile'),
          };
        const created = await trusthub.customerProfiles.create({
          friendlyName: name,
          email: options.notificationEmail,
          policySid: SECONDARY_CUSTOMER_PROFILE_POLICY,
          statusCallback: registrationCallbackUrl(options.publicUrl, request.accountId, submissionId),
        });
        const assign = (objectSid: string) =>
          trusthub.customerProfiles(created.sid).customerProfilesEntityAssignments.create({ objectSid });
        const business = await createEndUser(
          `${name} business`,
          'customer_profile_business_information',
          businessInformation(profile, request.taxId),
        );
        await assign(business.sid);
        const { contact } = profile;
        const representative = await createEndUser(`${name} representative`, 'authorized_representative_1', {
          first_name: contact.first_name,
          last_name: contact.last_name,
          email: contact.email,
          phone_number: contact.phone,
          business_title: contact.title,
          job_position: jobPositions[contact.job_position],
        });
        await assign(representative.sid);
        const { address } = profile;
        const addressResource = await client.addresses.create({
          customerName: profile.legal_name,
          street: address.street,
          ...(address.street_secondary && { streetSecondary: address.street_secondary }),
          city: address.city,
          region: address.region,
          postalCode: address.postal_code,
          isoCountry: address.country,
        });
        const document = await trusthub.supportingDocuments.create({
          friendlyName: `${name} address`,
          type: 'customer_profile_address',
          attributes: { address_sids: addressResource.sid },
        });
        await assign(document.sid);
        await assign(options.primaryCustomerProfileId);
        const evaluation = await trusthub
          .customerProfiles(created.sid)
          .customerProfilesEvaluations.create({ policySid: SECONDARY_CUSTOMER_PROFILE_POLICY });
        if (evaluation.status !== 'compliant')
          throw new CarrierRefusal(evaluationFailures(evaluation.results), 'twilio_evaluation_noncompliant');
        const submitted = await trusthub.customerProfiles(created.sid).update({ status: 'pending-review' });
        return {
          id: created.sid,
          verdict: bundleVerdict(submitted.status, submitted.errors, 'business profile'),
        };
      }),

    customerProfileStatus: (id) =>
      refusalsAsCarrierRefusal(async () => {
        const profile = await trusthub.customerProfiles(id).fetch();
        return bundleVerdict(profile.status, profile.errors, 'business profile');
      }),

    submitTrustProduct: (request) =>
      refusalsAsCarrierRefusal(async () => {
        const { profile, submissionId } = request;
        const name = trustProductName(submissionId);
        const [existing] = await trusthub.trustProducts.list({ friendlyName: name, limit: 20 });
        if (existing && existing.status !== 'draft')
          return {
            id: existing.sid,
            verdict: bundleVerdict(existing.status, existing.errors, 'messaging profile'),
          };
        const product = await trusthub.trustProducts.create({
          friendlyName: name,
          email: options.notificationEmail,
          policySid: A2P_TRUST_PRODUCT_POLICY,
          statusCallback: registrationCallbackUrl(options.publicUrl, request.accountId, submissionId),
        });
        const assign = (objectSid: string) =>
          trusthub.trustProducts(product.sid).trustProductsEntityAssignments.create({ objectSid });
        const messagingProfile = await createEndUser(
          `${name} information`,
          'us_a2p_messaging_profile_information',
          {
            company_type: profile.business_type === 'non_profit' ? 'non_profit' : 'private',
            brand_contact_email: profile.contact.email,
          },
        );
        await assign(messagingProfile.sid);
        await assign(request.customerProfileId);
        const evaluation = await trusthub
          .trustProducts(product.sid)
          .trustProductsEvaluations.create({ policySid: A2P_TRUST_PRODUCT_POLICY });
        if (evaluation.status !== 'compliant')
          throw new CarrierRefusal(evaluationFailures(evaluation.results), 'twilio_evaluation_noncompliant');
        const submitted = await trusthub.trustProducts(product.sid).update({ status: 'pending-review' });
        return {
          id: product.sid,
          verdict: bundleVerdict(submitted.status, submitted.errors, 'messaging profile'),
        };
      }),

    trustProductStatus: (id) =>
      refusalsAsCarrierRefusal(async () => {
        const product = await trusthub.trustProducts(id).fetch();
        return bundleVerdict(product.status, product.errors, 'messaging profile');
      }),

    registerBrand: (request) =>
      refusalsAsCarrierRefusal(async () => {
        // One brand per trust product: a brand registered before a crash is found, not paid for twice.
        const brands = await messaging.brandRegistrations.list({ pageSize: 1000 });
        const brand =
          brands.find((candidate) => candidate.a2pProfileBundleSid === request.trustProductId) ??
          (await messaging.brandRegistrations.create({
            customerProfileBundleSid: request.customerProfileId,
            a2PProfileBundleSid: request.trustProductId,
          }));
        return { id: brand.sid, verdict: brandVerdict(brand) };
      }),

    brandStatus: (id) =>
      refusalsAsCarrierRefusal(async () => brandVerdict(await messaging.brandRegistrations(id).fetch())),

    createMessagingService: (request) =>
      refusalsAsCarrierRefusal(async () => {
        // Inbound SMS keep going to each number's own webhook, not the service's.
        const service = await messaging.services.create({
          friendlyName: `account ${request.accountId}`,
          useInboundWebhookOnNumber: true,
        });
        return { id: service.sid };
      }),

    registerCampaign: (request) =>
      refusalsAsCarrierRefusal(async () => {
        const { profile, keywords } = request;
        const campaigns = messaging.services(request.messagingServiceId).usAppToPerson;
        // A service holds one campaign: one registered before a crash is the one.
        const [existing] = await campaigns.list({ limit: 1 });
        const campaign =
          existing ??
          (await campaigns.create({
            brandRegistrationSid: request.brandId,
            usAppToPersonUsecase: profile.use_case.toUpperCase(),
            description: profile.use_case_description,
            messageFlow: profile.message_flow,
            messageSamples: profile.sample_messages,
            hasEmbeddedLinks: profile.has_embedded_links,
            hasEmbeddedPhone: profile.has_embedded_phone,
            directLending: profile.direct_lending,
            ...(profile.opt_in_keywords.length > 0 && { optInKeywords: profile.opt_in_keywords }),
            ...(profile.opt_in_message && { optInMessage: profile.opt_in_message }),
            optOutKeywords: keywords.opt_out_keywords,
            optOutMessage: keywords.opt_out_message,
            helpKeywords: keywords.help_keywords,
            helpMessage: keywords.help_message,
          }));
        return { id: campaign.sid, verdict: campaignVerdict(campaign) };
      }),

    campaignStatus: (request) =>
      refusalsAsCarrierRefusal(async () =>
        campaignVerdict(
          await messaging.services(request.messagingServiceId).usAppToPerson(request.campaignId).fetch(),
        ),
      ),

    attachNumber: (request) =>
      refusalsAsCarrierRefusal(async () => {
        const [owned] = await client.incomingPhoneNumbers.list({
          phoneNumber: request.phoneNumber,
          limit: 1,
        });
        if (owned?.phoneNumber !== request.phoneNumber) {
          throw new CarrierRefusal(
            "The account's number is not one of this Twilio account's numbers.",
            'number_not_owned',
          );
        }
        const numbers = messaging.services(request.messagingServiceId).phoneNumbers;
        const inService = await numbers.list({ pageSize: 1000 });
        if (!inService.some((number) => number.sid === owned.sid))
          await numbers.create({ phoneNumberSid: owned.sid });
        return { id: owned.sid, verdict: { status: 'approved' } };
      }),
  };
}

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

function brandVerdict(brand: { status: string; failureReason: string; errors: unknown[] }): CarrierVerdict {
  switch (brand.status) {
    case 'APPROVED':
      return { status: 'approved' };
    case 'FAILED':
    case 'SUSPENDED':
    case 'DELETION_PENDING':
    case 'DELETION_FAILED':
      return {
        status: 'failed',
        reason:
          brand.failureReason ||
          reasonOf(brand.errors, `The brand registration is ${brand.status.toLowerCase()}.`),
      };
    default:
      return { status: 'pending' };
  }
}

function campaignVerdict(campaign: { campaignStatus: string; errors: unknown[] }): CarrierVerdict {
  switch (campaign.campaignStatus) {
    case 'VERIFIED':
      return { status: 'approved' };
    case 'FAILED':
    case 'SUSPENDED':
      return {
        status: 'failed',
        reason: reasonOf(
          campaign.errors,
          `The campaign registration is ${campaign.campaignStatus.toLowerCase()}.`,
        ),
      };
    default:
      return { status: 'pending' };
  }
}
