import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FakeBrand, FakeCampaign, FakeMessagingService } from './model';
import { iso, MESSAGING, page, sidOf, type FakeComplianceApi } from './resources';

/** The Messaging API's A2P endpoints: brand registrations, messaging services, their campaigns and numbers. */
export async function handleMessaging(
  api: FakeComplianceApi,
  request: IncomingMessage,
  response: ServerResponse,
  url: URL,
): Promise<boolean> {
  const { json, twilioError, state } = api;
  const { brandResource, serviceResource } = api.resources;
  const context = api;
  const path = url.pathname;
  const method = request.method ?? 'GET';
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
  const handled =
    collection === 'Compliance/Usa2p'
      ? await handleCampaigns(api, request, response, url, service, itemSid)
      : await handleServiceNumbers(api, request, response, url, service, itemSid);
  if (handled) return true;
  json(response, 405, twilioError(405, 20004, 'Method not allowed'));
  return true;
}

/** A messaging service's A2P campaigns (`Compliance/Usa2p`); false for a method it does not take. */
async function handleCampaigns(
  api: FakeComplianceApi,
  request: IncomingMessage,
  response: ServerResponse,
  url: URL,
  service: FakeMessagingService,
  itemSid: string | undefined,
): Promise<boolean> {
  const { json, twilioError, state } = api;
  const context = api;
  const path = url.pathname;
  const method = request.method ?? 'GET';
  const { campaignResource } = api.resources;
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
      json(response, 409, twilioError(409, 21711, 'The messaging service already has a US A2P campaign.'));
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
  return false;
}

/** A messaging service's phone numbers; false for a method it does not take. */
async function handleServiceNumbers(
  api: FakeComplianceApi,
  request: IncomingMessage,
  response: ServerResponse,
  url: URL,
  service: FakeMessagingService,
  itemSid: string | undefined,
): Promise<boolean> {
  const { accountSid, json, twilioError, state } = api;
  const context = api;
  const method = request.method ?? 'GET';
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
      json(response, 400, twilioError(400, 21452, `PhoneNumberSid ${sid} is not a number of this account.`));
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
  return false;
}
