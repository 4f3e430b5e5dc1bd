import type { CarrierVerdict } from '@leadline/domain';
import type twilio from 'twilio';
import { CarrierRefusal, type CampaignRequest, type RegistrationRequest, type Submitted } from './port';
import { reasonOf } from './twilio-errors';

/**
 * The Messaging side of A2P 10DLC registration: the brand (registered from an approved trust
 * product), the messaging service, the US A2P campaign on it and the account's number in it. Twilio
 * calls back about brands and campaigns only through Event Streams, so their reviews are looked at
 * again rather than waited for.
 */
type Messaging = twilio.Twilio['messaging']['v1'];

export async function registerBrand(
  messaging: Messaging,
  request: RegistrationRequest & { customerProfileId: string; trustProductId: string },
): Promise<Submitted> {
  // One brand per trust product: a brand registered before a crash is found, not paid for twice.
  const brands = await messaging.brandRegistrations.list({ pageSize: 1000 });
  const brand =
    brands.find((candidate) => candidate.a2pProfileBundleSid === request.trustProductId) ??
    (await messaging.brandRegistrations.create({
      customerProfileBundleSid: request.customerProfileId,
      a2PProfileBundleSid: request.trustProductId,
    }));
  return { id: brand.sid, verdict: brandVerdict(brand) };
}

export async function brandStatus(messaging: Messaging, id: string): Promise<CarrierVerdict> {
  return brandVerdict(await messaging.brandRegistrations(id).fetch());
}

export async function createMessagingService(
  messaging: Messaging,
  request: Pick<RegistrationRequest, 'accountId'>,
): Promise<{ id: string }> {
  // Inbound SMS keep going to each number's own webhook, not the service's.
  const service = await messaging.services.create({
    friendlyName: `account ${request.accountId}`,
    useInboundWebhookOnNumber: true,
  });
  return { id: service.sid };
}

export async function registerCampaign(messaging: Messaging, request: CampaignRequest): Promise<Submitted> {
  const campaigns = messaging.services(request.messagingServiceId).usAppToPerson;
  // A service holds one campaign: one registered before a crash is the one.
  const [existing] = await campaigns.list({ limit: 1 });
  const campaign = existing ?? (await campaigns.create(campaignRegistration(request)));
  return { id: campaign.sid, verdict: campaignVerdict(campaign) };
}

export async function campaignStatus(
  messaging: Messaging,
  request: { campaignId: string; messagingServiceId: string },
): Promise<CarrierVerdict> {
  return campaignVerdict(
    await messaging.services(request.messagingServiceId).usAppToPerson(request.campaignId).fetch(),
  );
}

/** Puts the account's number into the messaging service, once; refused if the Twilio account does not own it. */
export async function attachNumber(
  client: twilio.Twilio,
  request: { messagingServiceId: string; phoneNumber: string },
): Promise<Submitted> {
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
  const numbers = client.messaging.v1.services(request.messagingServiceId).phoneNumbers;
  const inService = await numbers.list({ pageSize: 1000 });
  if (!inService.some((number) => number.sid === owned.sid))
    await numbers.create({ phoneNumberSid: owned.sid });
  return { id: owned.sid, verdict: { status: 'approved' } };
}

/** The campaign as Twilio's US A2P registration wants it: the use case, samples, and keyword replies. */
function campaignRegistration({ profile, keywords, brandId }: CampaignRequest) {
  return {
    brandRegistrationSid: brandId,
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
