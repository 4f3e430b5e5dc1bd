import { randomBytes } from 'node:crypto';
import type {
  FakeBrand,
  FakeBundle,
  FakeCampaign,
  FakeCompliance,
  FakeComplianceContext,
  FakeMessagingService,
} from './model';

export const hex = (bytes: number) => randomBytes(bytes).toString('hex');
export const sidOf = (prefix: string) => `${prefix}${hex(16)}`;
export const iso = (date: Date) => `${date.toISOString().slice(0, 19)}Z`;
export const rfc2822 = (date: Date) => date.toUTCString().replace('GMT', '+0000');
export const TRUSTHUB = 'https://trusthub.twilio.com/v1';
export const MESSAGING = 'https://messaging.twilio.com/v1';

/** A v1 list page as Twilio answers it: the records under `key`, and a `meta` naming the key. */
export function page(key: string, url: string, records: unknown[], pageSize: number) {
  return {
    [key]: records.slice(0, pageSize),
    meta: {
      page: 0,
      page_size: pageSize,
      first_page_url: `${url}?PageSize=${pageSize}&Page=0`,
      previous_page_url: null,
      url: `${url}?PageSize=${pageSize}&Page=0`,
      next_page_url: null,
      key,
    },
  };
}

/** The JSON Twilio answers for each resource, and Trust Hub's evaluation of a bundle. */
export function complianceResources(accountSid: string, state: FakeCompliance) {
  return { ...trustHubResources(accountSid, state), ...messagingResources(accountSid, state) };
}

/** Trust Hub's bundles, and its evaluation of one. */
function trustHubResources(accountSid: string, state: FakeCompliance) {
  const bundleResource = (bundle: FakeBundle) => {
    const collection = bundle.kind === 'customer_profile' ? 'CustomerProfiles' : 'TrustProducts';
    const prefix = bundle.kind === 'customer_profile' ? 'customer_profiles' : 'trust_products';
    const url = `${TRUSTHUB}/${collection}/${bundle.sid}`;
    return {
      sid: bundle.sid,
      account_sid: accountSid,
      policy_sid: bundle.policySid,
      friendly_name: bundle.friendlyName,
      status: bundle.status,
      valid_until: null,
      email: bundle.email,
      status_callback: bundle.statusCallback ?? null,
      date_created: iso(bundle.dateCreated),
      date_updated: iso(bundle.dateCreated),
      url,
      links: {
        [`${prefix}_entity_assignments`]: `${url}/EntityAssignments`,
        [`${prefix}_evaluations`]: `${url}/Evaluations`,
        [`${prefix}_channel_endpoint_assignment`]: `${url}/ChannelEndpointAssignments`,
      },
      errors: bundle.errors.length > 0 ? bundle.errors : null,
    };
  };

  /** What Trust Hub's evaluation of a bundle finds missing, as Twilio lists unmet requirements. */
  function evaluate(bundle: FakeBundle) {
    const assigned = new Set(bundle.assignments);
    const hasEndUser = (type: string) =>
      state.endUsers.some((user) => assigned.has(user.sid) && user.type === type);
    const requirements =
      bundle.kind === 'customer_profile'
        ? [
            ['Business Information', hasEndUser('customer_profile_business_information')],
            ['Authorized Representative', hasEndUser('authorized_representative_1')],
            [
              'Business Address',
              state.supportingDocuments.some(
                (document) => assigned.has(document.sid) && document.type === 'customer_profile_address',
              ),
            ],
            ['Primary Customer Profile', bundle.assignments.some((sid) => sid.startsWith('BU'))],
          ]
        : [
            ['A2P Messaging Profile Information', hasEndUser('us_a2p_messaging_profile_information')],
            [
              'Secondary Customer Profile',
              state.customerProfiles.some((profile) => assigned.has(profile.sid)),
            ],
          ];
    const results = requirements.map(([name, passed]) => ({
      friendly_name: name,
      object_type: 'bundle',
      passed,
      failure_reason: passed ? null : `${name as string} is missing. Please add it to the bundle.`,
      error_code: passed ? null : 22214,
      valid: [],
      invalid: [],
      requirement_friendly_name: name,
      requirement_name: String(name).toLowerCase().replaceAll(' ', '_'),
    }));
    return { status: results.every((result) => result.passed) ? 'compliant' : 'noncompliant', results };
  }

  return { bundleResource, evaluate };
}

/** The Messaging API's brand registrations, services and campaigns. */
function messagingResources(accountSid: string, state: FakeCompliance) {
  const brandResource = (brand: FakeBrand) => ({
    sid: brand.sid,
    account_sid: accountSid,
    customer_profile_bundle_sid: brand.customerProfileBundleSid,
    a2p_profile_bundle_sid: brand.a2pProfileBundleSid,
    date_created: iso(new Date()),
    date_updated: iso(new Date()),
    brand_type: 'STANDARD',
    status: brand.status,
    tcr_id: brand.status === 'APPROVED' ? 'BXXXXXX' : null,
    failure_reason: brand.failureReason,
    errors: brand.errors,
    url: `${MESSAGING}/a2p/BrandRegistrations/${brand.sid}`,
    brand_score: brand.status === 'APPROVED' ? 42 : null,
    brand_feedback: null,
    identity_status: brand.status === 'APPROVED' ? 'VERIFIED' : null,
    russell_3000: false,
    government_entity: false,
    tax_exempt_status: null,
    skip_automatic_sec_vet: false,
    mock: false,
    links: {
      brand_vettings: `${MESSAGING}/a2p/BrandRegistrations/${brand.sid}/Vettings`,
      brand_registration_otps: `${MESSAGING}/a2p/BrandRegistrations/${brand.sid}/SmsOtp`,
    },
  });

  const serviceResource = (service: FakeMessagingService) => ({
    account_sid: accountSid,
    sid: service.sid,
    friendly_name: service.friendlyName,
    date_created: iso(new Date()),
    date_updated: iso(new Date()),
    inbound_request_url: null,
    inbound_method: 'POST',
    fallback_url: null,
    fallback_method: 'POST',
    status_callback: null,
    sticky_sender: true,
    mms_converter: true,
    smart_encoding: true,
    scan_message_content: 'inherit',
    fallback_to_long_code: true,
    area_code_geomatch: true,
    synchronous_validation: true,
    validity_period: 14400,
    url: `${MESSAGING}/Services/${service.sid}`,
    links: {
      phone_numbers: `${MESSAGING}/Services/${service.sid}/PhoneNumbers`,
      us_app_to_person: `${MESSAGING}/Services/${service.sid}/Compliance/Usa2p`,
    },
    usecase: 'undeclared',
    us_app_to_person_registered: state.campaigns.some(
      (campaign) => campaign.messagingServiceSid === service.sid && campaign.campaignStatus === 'VERIFIED',
    ),
    use_inbound_webhook_on_number: service.useInboundWebhookOnNumber,
  });

  const campaignResource = (campaign: FakeCampaign) => ({
    sid: campaign.sid,
    account_sid: accountSid,
    brand_registration_sid: campaign.brandRegistrationSid,
    messaging_service_sid: campaign.messagingServiceSid,
    description: campaign.description,
    message_samples: campaign.messageSamples,
    us_app_to_person_usecase: campaign.usecase,
    has_embedded_links: campaign.hasEmbeddedLinks,
    has_embedded_phone: campaign.hasEmbeddedPhone,
    subscriber_opt_in: false,
    age_gated: false,
    direct_lending: campaign.directLending,
    campaign_status: campaign.campaignStatus,
    campaign_id: campaign.campaignStatus === 'VERIFIED' ? 'CXXXXXX' : null,
    is_externally_registered: false,
    rate_limits: { att: { mps: 600, msg_class: 'A' }, tmobile: { brand_tier: 'TOP' } },
    message_flow: campaign.messageFlow,
    opt_in_message: campaign.optInMessage,
    opt_out_message: campaign.optOutMessage,
    help_message: campaign.helpMessage,
    opt_in_keywords: campaign.optInKeywords,
    opt_out_keywords: campaign.optOutKeywords,
    help_keywords: campaign.helpKeywords,
    date_created: iso(new Date()),
    date_updated: iso(new Date()),
    url: `${MESSAGING}/Services/${campaign.messagingServiceSid}/Compliance/Usa2p/${campaign.sid}`,
    mock: false,
    errors: campaign.errors,
    privacy_policy_url: null,
    terms_and_conditions_url: null,
  });

  return { brandResource, serviceResource, campaignResource };
}

/** What the endpoint handlers work with: the shared context, the fake's state and the resources' shapes. */
export interface FakeComplianceApi extends FakeComplianceContext {
  state: FakeCompliance;
  resources: ReturnType<typeof complianceResources>;
}
