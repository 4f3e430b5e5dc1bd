import { twilioClient, type TwilioOptions } from '../twilio';
import type { CarrierRegistration } from './port';
import { refusalsAsCarrierRefusal } from './twilio-errors';
import {
  attachNumber,
  brandStatus,
  campaignStatus,
  createMessagingService,
  registerBrand,
  registerCampaign,
} from './twilio-messaging';
import {
  bundleStatus,
  customerProfileBundles,
  submitCustomerProfile,
  submitTrustProduct,
  trustProductBundles,
  type TrustHubSettings,
} from './twilio-trust-hub';

export {
  A2P_TRUST_PRODUCT_POLICY,
  SECONDARY_CUSTOMER_PROFILE_POLICY,
  registrationCallbackUrl,
} from './twilio-trust-hub';

export interface TwilioRegistrationOptions
  extends Pick<TwilioOptions, 'accountSid' | 'authToken' | 'apiBaseUrl'>, TrustHubSettings {}

/**
 * Twilio's A2P 10DLC onboarding for ISVs, step by step as Twilio's guide has it: a secondary customer
 * profile (business information, authorized representative, address as a supporting document, tied to
 * our primary profile, evaluated, submitted); an A2P trust product over it; a brand registration; a
 * messaging service; a US A2P campaign on it; the number added to the service. Trust Hub reviews call
 * back (`statusCallback`); brands and campaigns are looked at again (Twilio calls back for those only
 * through Event Streams). Every call turns Twilio's refusals into CarrierRefusal.
 */
export function createTwilioCarrierRegistration(options: TwilioRegistrationOptions): CarrierRegistration {
  const client = twilioClient({ ...options, publicUrl: options.publicUrl });
  const messaging = client.messaging.v1;
  const customerProfiles = customerProfileBundles(client.trusthub.v1);
  const trustProducts = trustProductBundles(client.trusthub.v1);

  return {
    submitCustomerProfile: (request) =>
      refusalsAsCarrierRefusal(() => submitCustomerProfile(client, options, request)),
    customerProfileStatus: (id) => refusalsAsCarrierRefusal(() => bundleStatus(customerProfiles, id)),
    submitTrustProduct: (request) =>
      refusalsAsCarrierRefusal(() => submitTrustProduct(client, options, request)),
    trustProductStatus: (id) => refusalsAsCarrierRefusal(() => bundleStatus(trustProducts, id)),
    registerBrand: (request) => refusalsAsCarrierRefusal(() => registerBrand(messaging, request)),
    brandStatus: (id) => refusalsAsCarrierRefusal(() => brandStatus(messaging, id)),
    createMessagingService: (request) =>
      refusalsAsCarrierRefusal(() => createMessagingService(messaging, request)),
    registerCampaign: (request) => refusalsAsCarrierRefusal(() => registerCampaign(messaging, request)),
    campaignStatus: (request) => refusalsAsCarrierRefusal(() => campaignStatus(messaging, request)),
    attachNumber: (request) => refusalsAsCarrierRefusal(() => attachNumber(client, request)),
  };
}
