import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** A Trust Hub bundle: a customer profile (the business) or a trust product (its A2P messaging profile). */
export interface FakeBundle {
  sid: string;
  kind: 'customer_profile' | 'trust_product';
  friendlyName: string;
  email: string;
  policySid: string;
  statusCallback: string | undefined;
  status: 'draft' | 'pending-review' | 'in-review' | 'twilio-rejected' | 'twilio-approved';
  errors: unknown[];
  /** The sids assigned to it (end users, supporting documents, profiles), in order. */
  assignments: string[];
  dateCreated: Date;
}

export interface FakeEndUser {
  sid: string;
  type: string;
  friendlyName: string;
  attributes: Record<string, unknown>;
}

export interface FakeSupportingDocument {
  sid: string;
  type: string;
  friendlyName: string;
  attributes: Record<string, unknown>;
}

export interface FakeAddress {
  sid: string;
  customerName: string;
  street: string;
  streetSecondary: string | null;
  city: string;
  region: string;
  postalCode: string;
  isoCountry: string;
}

export interface FakeBrand {
  sid: string;
  customerProfileBundleSid: string;
  a2pProfileBundleSid: string;
  status: 'PENDING' | 'IN_REVIEW' | 'APPROVED' | 'FAILED' | 'SUSPENDED';
  failureReason: string | null;
  errors: unknown[];
}

export interface FakeMessagingService {
  sid: string;
  friendlyName: string;
  useInboundWebhookOnNumber: boolean;
  /** The IncomingPhoneNumber sids in the service. */
  phoneNumberSids: string[];
}

export interface FakeCampaign {
  sid: string;
  messagingServiceSid: string;
  brandRegistrationSid: string;
  usecase: string;
  description: string;
  messageFlow: string;
  messageSamples: string[];
  hasEmbeddedLinks: boolean;
  hasEmbeddedPhone: boolean;
  directLending: boolean;
  optInKeywords: string[];
  optInMessage: string | null;
  optOutKeywords: string[];
  optOutMessage: string | null;
  helpKeywords: string[];
  helpMessage: string | null;
  campaignStatus: 'PENDING' | 'IN_PROGRESS' | 'VERIFIED' | 'FAILED';
  errors: unknown[];
}

export interface FakeCallback {
  url: string;
  form: Record<string, string>;
  /** False when it was dropped (`dropCallbacks`): Twilio's request never reached us. */
  delivered: boolean;
}

/**
 * Twilio's A2P 10DLC onboarding endpoints (Trust Hub, brand registrations, messaging services, US A2P
 * campaigns and their phone numbers), kept in memory. Reviews are decided by the test: `review`,
 * `setBrandStatus` and `setCampaignStatus` play the carriers, and a Trust Hub review posts its status
 * callback, signed as Twilio signs, through `deliver`.
 */
export interface FakeCompliance {
  customerProfiles: FakeBundle[];
  trustProducts: FakeBundle[];
  endUsers: FakeEndUser[];
  supportingDocuments: FakeSupportingDocument[];
  addresses: FakeAddress[];
  brands: FakeBrand[];
  services: FakeMessagingService[];
  campaigns: FakeCampaign[];
  callbacks: FakeCallback[];
  /** Trust Hub callbacks are lost on the way (a network fault): Twilio tried, we never heard. */
  dropCallbacks: boolean;
  /**
   * Posts a callback to our API: `url` as given to Twilio, the form, and its X-Twilio-Signature. By
   * default an HTTP POST; a test aims it at its app (`app.inject`).
   */
  deliver: (url: string, form: Record<string, string>, signature: string) => Promise<void>;
  /** Answers the next `count` onboarding requests with a 503, as during an outage. */
  failNext(count: number): void;
  /** Requests made to the onboarding endpoints (method and path), in order. */
  requests: string[];
  /** Decides a Trust Hub review (as Twilio's reviewers) and posts the bundle's status callback. */
  review(sid: string, status: 'twilio-approved' | 'twilio-rejected', errors?: unknown[]): Promise<void>;
  setBrandStatus(sid: string, status: FakeBrand['status'], failureReason?: string): void;
  setCampaignStatus(sid: string, status: FakeCampaign['campaignStatus'], errors?: unknown[]): void;
}

/** What the compliance endpoints share with the rest of the fake. */
export interface FakeComplianceContext {
  accountSid: string;
  /** The account's IncomingPhoneNumbers, by sid and number. */
  numbers: readonly { sid: string; phoneNumber: string }[];
  readForm(request: IncomingMessage): Promise<URLSearchParams>;
  json(response: ServerResponse, status: number, body: unknown): void;
  twilioError(status: number, code: number, message: string): unknown;
  sign(url: string, form: Record<string, string>): string;
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const sidOf = (prefix: string) => `${prefix}${hex(16)}`;
const iso = (date: Date) => `${date.toISOString().slice(0, 19)}Z`;
const rfc2822 = (date: Date) => date.toUTCString().replace('GMT', '+0000');
const TRUSTHUB = 'https://trusthub.twilio.com/v1';
const MESSAGING = 'https://messaging.twilio.com/v1';

/** A v1 list page as Twilio answers it: the records under `key`, and a `meta` naming the key. */
function page(key: string, url: string, records: unknown[], pageSize: number) {
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

export function createFakeCompliance(context: FakeComplianceContext) {
  const { accountSid, json, twilioError } = context;
  let failures = 0;
  const state: FakeCompliance = {
    customerProfiles: [],
    trustProducts: [],
    endUsers: [],
    supportingDocuments: [],
    addresses: [],
    brands: [],
    services: [],
    campaigns: [],
    callbacks: [],
    dropCallbacks: false,
    requests: [],
    deliver: async (url, form, signature) => {
      await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature },
        body: new URLSearchParams(form),
      });
    },
    failNext(count) {
      failures = count;
    },
    async review(sid, status, errors = []) {
      const bundle = [...state.customerProfiles, ...state.trustProducts].find((entry) => entry.sid === sid);
      if (!bundle) throw new Error(`no bundle ${sid}`);
      bundle.status = status;
      bundle.errors = errors;
      if (!bundle.statusCallback) return;
      // Form fields as Trust Hub's status callback sends them.
      const form = {
        AccountSid: accountSid,
        BundleSid: bundle.sid,
        Status: status,
        FailureReason: errors.length > 0 ? JSON.stringify(errors) : '',
      };
      const callback = { url: bundle.statusCallback, form, delivered: !state.dropCallbacks };
      state.callbacks.push(callback);
      if (callback.delivered) await state.deliver(callback.url, form, context.sign(callback.url, form));
    },
    setBrandStatus(sid, status, failureReason) {
      const brand = state.brands.find((entry) => entry.sid === sid);
      if (!brand) throw new Error(`no brand ${sid}`);
      brand.status = status;
      brand.failureReason = failureReason ?? null;
      brand.errors = failureReason ? [{ code: 30794, description: failureReason, fields: [] }] : [];
    },
    setCampaignStatus(sid, status, errors = []) {
      const campaign = state.campaigns.find((entry) => entry.sid === sid);
      if (!campaign) throw new Error(`no campaign ${sid}`);
      campaign.campaignStatus = status;
      campaign.errors = errors;
    },
  };

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

  async function handleBundles(
    request: IncomingMessage,
    response: ServerResponse,
    url: URL,
    kind: FakeBundle['kind'],
    collection: string,
    list: FakeBundle[],
  ): Promise<boolean> {
    const root = `/trusthub/v1/${collection}`;
    const method = request.method;
    if (url.pathname === root && method === 'POST') {
      const form = await context.readForm(request);
      const bundle: FakeBundle = {
        sid: sidOf('BU'),
        kind,
        friendlyName: form.get('FriendlyName') ?? '',
        email: form.get('Email') ?? '',
        policySid: form.get('PolicySid') ?? '',
        statusCallback: form.get('StatusCallback') ?? undefined,
        status: 'draft',
        errors: [],
        assignments: [],
        dateCreated: new Date(),
      };
      list.push(bundle);
      json(response, 201, bundleResource(bundle));
      return true;
    }
    if (url.pathname === root && method === 'GET') {
      const name = url.searchParams.get('FriendlyName');
      const status = url.searchParams.get('Status');
      const found = list.filter(
        (bundle) =>
          (name === null || bundle.friendlyName === name) && (status === null || bundle.status === status),
      );
      json(
        response,
        200,
        page(
          'results',
          `${TRUSTHUB}/${collection}`,
          found.map(bundleResource),
          Number(url.searchParams.get('PageSize') ?? 50),
        ),
      );
      return true;
    }
    const match = url.pathname.match(
      new RegExp(`^${root}/(BU[0-9a-f]{32})(?:/(EntityAssignments|Evaluations))?$`),
    );
    if (!match) return false;
    const bundle = list.find((entry) => entry.sid === match[1]);
    if (!bundle) {
      json(response, 404, twilioError(404, 20404, `The requested resource ${url.pathname} was not found`));
      return true;
    }
    if (!match[2] && method === 'GET') {
      json(response, 200, bundleResource(bundle));
      return true;
    }
    if (!match[2] && method === 'POST') {
      const form = await context.readForm(request);
      const status = form.get('Status');
      if (status === 'pending-review') {
        if (evaluate(bundle).status !== 'compliant') {
          json(
            response,
            400,
            twilioError(400, 22215, 'The bundle is not compliant; evaluate it and complete it first.'),
          );
          return true;
        }
        bundle.status = 'pending-review';
      }
      json(response, 200, bundleResource(bundle));
      return true;
    }
    if (match[2] === 'EntityAssignments' && method === 'POST') {
      const form = await context.readForm(request);
      const objectSid = form.get('ObjectSid') ?? '';
      const known =
        state.endUsers.some((user) => user.sid === objectSid) ||
        state.supportingDocuments.some((document) => document.sid === objectSid) ||
        objectSid.startsWith('BU');
      if (!known) {
        json(response, 400, twilioError(400, 20001, `Invalid ObjectSid ${objectSid}`));
        return true;
      }
      bundle.assignments.push(objectSid);
      const parent = kind === 'customer_profile' ? 'customer_profile_sid' : 'trust_product_sid';
      json(response, 201, {
        sid: sidOf('BV'),
        [parent]: bundle.sid,
        account_sid: accountSid,
        object_sid: objectSid,
        date_created: iso(new Date()),
        url: `${TRUSTHUB}/${collection}/${bundle.sid}/EntityAssignments`,
      });
      return true;
    }
    if (match[2] === 'Evaluations' && method === 'POST') {
      await context.readForm(request);
      const evaluation = evaluate(bundle);
      const parent = kind === 'customer_profile' ? 'customer_profile_sid' : 'trust_product_sid';
      json(response, 201, {
        sid: sidOf('EL'),
        account_sid: accountSid,
        policy_sid: bundle.policySid,
        [parent]: bundle.sid,
        status: evaluation.status,
        results: evaluation.results,
        date_created: iso(new Date()),
        url: `${TRUSTHUB}/${collection}/${bundle.sid}/Evaluations`,
      });
      return true;
    }
    return false;
  }

  /** True when the request was one of the onboarding endpoints (and answered). */
  async function handle(request: IncomingMessage, response: ServerResponse, url: URL): Promise<boolean> {
    const path = url.pathname;
    const method = request.method ?? 'GET';
    const addresses = `/2010-04-01/Accounts/${accountSid}/Addresses.json`;
    if (!path.startsWith('/trusthub/') && !path.startsWith('/messaging/') && path !== addresses) return false;
    state.requests.push(`${method} ${path}`);
    if (failures > 0) {
      failures--;
      json(response, 503, twilioError(503, 20503, 'Service Unavailable'));
      return true;
    }
    if (
      await handleBundles(
        request,
        response,
        url,
        'customer_profile',
        'CustomerProfiles',
        state.customerProfiles,
      )
    )
      return true;
    if (await handleBundles(request, response, url, 'trust_product', 'TrustProducts', state.trustProducts))
      return true;

    if (path === '/trusthub/v1/EndUsers' && method === 'POST') {
      const form = await context.readForm(request);
      const user: FakeEndUser = {
        sid: sidOf('IT'),
        type: form.get('Type') ?? '',
        friendlyName: form.get('FriendlyName') ?? '',
        attributes: JSON.parse(form.get('Attributes') ?? '{}') as Record<string, unknown>,
      };
      state.endUsers.push(user);
      json(response, 201, {
        sid: user.sid,
        account_sid: accountSid,
        friendly_name: user.friendlyName,
        type: user.type,
        attributes: user.attributes,
        date_created: iso(new Date()),
        date_updated: iso(new Date()),
        url: `${TRUSTHUB}/EndUsers/${user.sid}`,
      });
      return true;
    }
    if (path === '/trusthub/v1/SupportingDocuments' && method === 'POST') {
      const form = await context.readForm(request);
      const document: FakeSupportingDocument = {
        sid: sidOf('RD'),
        type: form.get('Type') ?? '',
        friendlyName: form.get('FriendlyName') ?? '',
        attributes: JSON.parse(form.get('Attributes') ?? '{}') as Record<string, unknown>,
      };
      const addressSids = ([] as unknown[]).concat(document.attributes.address_sids ?? []);
      if (!addressSids.every((sid) => state.addresses.some((address) => address.sid === sid))) {
        json(response, 400, twilioError(400, 22216, 'The supporting document names an unknown address.'));
        return true;
      }
      state.supportingDocuments.push(document);
      json(response, 201, {
        sid: document.sid,
        account_sid: accountSid,
        friendly_name: document.friendlyName,
        mime_type: null,
        status: 'draft',
        type: document.type,
        attributes: document.attributes,
        date_created: iso(new Date()),
        date_updated: iso(new Date()),
        url: `${TRUSTHUB}/SupportingDocuments/${document.sid}`,
      });
      return true;
    }
    if (path === addresses && method === 'POST') {
      const form = await context.readForm(request);
      const address: FakeAddress = {
        sid: sidOf('AD'),
        customerName: form.get('CustomerName') ?? '',
        street: form.get('Street') ?? '',
        streetSecondary: form.get('StreetSecondary'),
        city: form.get('City') ?? '',
        region: form.get('Region') ?? '',
        postalCode: form.get('PostalCode') ?? '',
        isoCountry: form.get('IsoCountry') ?? '',
      };
      state.addresses.push(address);
      const now = rfc2822(new Date());
      json(response, 201, {
        account_sid: accountSid,
        city: address.city,
        customer_name: address.customerName,
        date_created: now,
        date_updated: now,
        emergency_enabled: false,
        friendly_name: null,
        iso_country: address.isoCountry,
        postal_code: address.postalCode,
        region: address.region,
        sid: address.sid,
        street: address.street,
        street_secondary: address.streetSecondary,
        validated: false,
        verified: false,
        uri: `/2010-04-01/Accounts/${accountSid}/Addresses/${address.sid}.json`,
      });
      return true;
    }

    if (path === '/messaging/v1/a2p/BrandRegistrations' && method === 'POST') {
      const form = await context.readForm(request);
      const profile = state.customerProfiles.find(
        (entry) => entry.sid === form.get('CustomerProfileBundleSid'),
      );
      const product = state.trustProducts.find((entry) => entry.sid === form.get('A2PProfileBundleSid'));
      if (profile?.status !== 'twilio-approved' || product?.status !== 'twilio-approved') {
        json(
          response,
          400,
          twilioError(400, 21707, 'The customer profile and the A2P profile must be approved.'),
        );
        return true;
      }
      const brand: FakeBrand = {
        sid: sidOf('BN'),
        customerProfileBundleSid: profile.sid,
        a2pProfileBundleSid: product.sid,
        status: 'PENDING',
        failureReason: null,
        errors: [],
      };
      state.brands.push(brand);
      json(response, 201, brandResource(brand));
      return true;
    }
    if (path === '/messaging/v1/a2p/BrandRegistrations' && method === 'GET') {
      const pageSize = Number(url.searchParams.get('PageSize') ?? 50);
      json(
        response,
        200,
        page('data', `${MESSAGING}/a2p/BrandRegistrations`, state.brands.map(brandResource), pageSize),
      );
      return true;
    }
    const brandPath = path.match(/^\/messaging\/v1\/a2p\/BrandRegistrations\/(BN[0-9a-f]{32})$/);
    if (brandPath && method === 'GET') {
      const brand = state.brands.find((entry) => entry.sid === brandPath[1]);
      if (brand) json(response, 200, brandResource(brand));
      else json(response, 404, twilioError(404, 20404, `The requested resource ${path} was not found`));
      return true;
    }

    if (path === '/messaging/v1/Services' && method === 'POST') {
      const form = await context.readForm(request);
      const service: FakeMessagingService = {
        sid: sidOf('MG'),
        friendlyName: form.get('FriendlyName') ?? '',
        useInboundWebhookOnNumber: form.get('UseInboundWebhookOnNumber') === 'true',
        phoneNumberSids: [],
      };
      state.services.push(service);
      json(response, 201, serviceResource(service));
      return true;
    }
    const servicePath = path.match(
      /^\/messaging\/v1\/Services\/(MG[0-9a-f]{32})\/(Compliance\/Usa2p|PhoneNumbers)(?:\/([A-Z]{2}[0-9a-f]{32}))?$/,
    );
    if (!servicePath) {
      json(response, 404, twilioError(404, 20404, `The requested resource ${path} was not found`));
      return true;
    }
    const service = state.services.find((entry) => entry.sid === servicePath[1]);
    if (!service) {
      json(response, 404, twilioError(404, 20404, `The requested resource ${path} was not found`));
      return true;
    }
    const [, , collection, itemSid] = servicePath;
    if (collection === 'Compliance/Usa2p') {
      const campaigns = state.campaigns.filter((campaign) => campaign.messagingServiceSid === service.sid);
      if (itemSid && method === 'GET') {
        const campaign = campaigns.find((entry) => entry.sid === itemSid);
        if (campaign) json(response, 200, campaignResource(campaign));
        else json(response, 404, twilioError(404, 20404, `The requested resource ${path} was not found`));
        return true;
      }
      if (!itemSid && method === 'GET') {
        const pageSize = Number(url.searchParams.get('PageSize') ?? 50);
        json(
          response,
          200,
          page(
            'compliance',
            `${MESSAGING}/Services/${service.sid}/Compliance/Usa2p`,
            campaigns.map(campaignResource),
            pageSize,
          ),
        );
        return true;
      }
      if (!itemSid && method === 'POST') {
        const form = await context.readForm(request);
        const brand = state.brands.find((entry) => entry.sid === form.get('BrandRegistrationSid'));
        if (brand?.status !== 'APPROVED') {
          json(
            response,
            400,
            twilioError(
              400,
              21717,
              'Brand Registration SID for US A2P Campaign Use Case is Not Registered or Not Valid',
            ),
          );
          return true;
        }
        if (campaigns.length > 0) {
          json(
            response,
            409,
            twilioError(409, 21711, 'The messaging service already has a US A2P campaign.'),
          );
          return true;
        }
        const samples = form.getAll('MessageSamples');
        const description = form.get('Description') ?? '';
        const messageFlow = form.get('MessageFlow') ?? '';
        // Twilio's length rules (error 21728).
        if (
          description.length < 40 ||
          messageFlow.length < 40 ||
          samples.length < 2 ||
          samples.length > 5 ||
          samples.some((sample) => sample.length < 20 || sample.length > 1024)
        ) {
          json(
            response,
            400,
            twilioError(400, 21728, 'Campaign registration failed due to length validation failures.'),
          );
          return true;
        }
        const campaign: FakeCampaign = {
          sid: sidOf('QE'),
          messagingServiceSid: service.sid,
          brandRegistrationSid: brand.sid,
          usecase: form.get('UsAppToPersonUsecase') ?? '',
          description,
          messageFlow,
          messageSamples: samples,
          hasEmbeddedLinks: form.get('HasEmbeddedLinks') === 'true',
          hasEmbeddedPhone: form.get('HasEmbeddedPhone') === 'true',
          directLending: form.get('DirectLending') === 'true',
          optInKeywords: form.getAll('OptInKeywords'),
          optInMessage: form.get('OptInMessage'),
          optOutKeywords: form.getAll('OptOutKeywords'),
          optOutMessage: form.get('OptOutMessage'),
          helpKeywords: form.getAll('HelpKeywords'),
          helpMessage: form.get('HelpMessage'),
          campaignStatus: 'IN_PROGRESS',
          errors: [],
        };
        state.campaigns.push(campaign);
        json(response, 201, campaignResource(campaign));
        return true;
      }
    }
    if (collection === 'PhoneNumbers') {
      const numberResource = (sid: string) => {
        const number = context.numbers.find((entry) => entry.sid === sid)!;
        return {
          sid,
          account_sid: accountSid,
          service_sid: service.sid,
          date_created: iso(new Date()),
          date_updated: iso(new Date()),
          phone_number: number.phoneNumber,
          country_code: 'US',
          capabilities: ['SMS', 'MMS', 'Voice'],
          url: `${MESSAGING}/Services/${service.sid}/PhoneNumbers/${sid}`,
        };
      };
      if (!itemSid && method === 'GET') {
        const pageSize = Number(url.searchParams.get('PageSize') ?? 50);
        json(
          response,
          200,
          page(
            'phone_numbers',
            `${MESSAGING}/Services/${service.sid}/PhoneNumbers`,
            service.phoneNumberSids.map(numberResource),
            pageSize,
          ),
        );
        return true;
      }
      if (!itemSid && method === 'POST') {
        const form = await context.readForm(request);
        const sid = form.get('PhoneNumberSid') ?? '';
        if (!context.numbers.some((entry) => entry.sid === sid)) {
          json(
            response,
            400,
            twilioError(400, 21452, `PhoneNumberSid ${sid} is not a number of this account.`),
          );
          return true;
        }
        if (state.services.some((other) => other.phoneNumberSids.includes(sid))) {
          json(response, 409, twilioError(409, 21712, 'Phone Number is already in a Messaging Service.'));
          return true;
        }
        service.phoneNumberSids.push(sid);
        json(response, 201, numberResource(sid));
        return true;
      }
    }
    json(response, 405, twilioError(405, 20004, 'Method not allowed'));
    return true;
  }

  return { state, handle };
}
