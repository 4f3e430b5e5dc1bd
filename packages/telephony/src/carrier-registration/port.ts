import type { CarrierVerdict, RegistrationProfile } from '@leadline/domain';

/**
 * The carriers' registration of an account's number (US A2P 10DLC), as a provider runs it. Two
 * adapters: Twilio's ISV onboarding API (Trust Hub, brand registrations, messaging services, US A2P
 * campaigns) whenever Twilio is configured, and a local simulation otherwise. Every method is one unit
 * of work the registration worker calls outside any transaction or lock. Each is safe to call again
 * after a crash: what it creates is found again rather than created twice where the provider allows.
 *
 * A method throws CarrierRefusal when the provider refused the request for good (the data is wrong, the
 * number is not ours...): the step fails with its reason. Any other error is a passing one (an outage,
 * a timeout) and the call is made again later.
 */
export interface CarrierRegistration {
  /** Creates the business's customer profile, fills it (business, representative, address) and submits it. */
  submitCustomerProfile(request: RegistrationRequest): Promise<Submitted>;
  customerProfileStatus(id: string): Promise<CarrierVerdict>;
  /** Creates the A2P messaging profile (trust product) over the customer profile, and submits it. */
  submitTrustProduct(request: RegistrationRequest & { customerProfileId: string }): Promise<Submitted>;
  trustProductStatus(id: string): Promise<CarrierVerdict>;
  registerBrand(
    request: RegistrationRequest & { customerProfileId: string; trustProductId: string },
  ): Promise<Submitted>;
  brandStatus(id: string): Promise<CarrierVerdict>;
  /** The messaging service the campaign is registered on and the account's number joins. */
  createMessagingService(request: Pick<RegistrationRequest, 'accountId' | 'submissionId'>): Promise<{
    id: string;
  }>;
  registerCampaign(request: CampaignRequest): Promise<Submitted>;
  campaignStatus(request: { campaignId: string; messagingServiceId: string }): Promise<CarrierVerdict>;
  /** Puts the account's number into the campaign's messaging service. */
  attachNumber(request: { messagingServiceId: string; phoneNumber: string }): Promise<Submitted>;
}

export interface RegistrationRequest {
  /** The account and its submission: they name what is created at the provider, and its callbacks. */
  accountId: string;
  submissionId: string;
  profile: RegistrationProfile;
  /** The full tax id (EIN); never logged, never stored in clear. */
  taxId: string;
}

export interface CampaignRequest extends RegistrationRequest {
  brandId: string;
  messagingServiceId: string;
  /** The keywords the account's number answers and its replies (see campaignKeywordReplies). */
  keywords: {
    opt_out_keywords: string[];
    opt_out_message: string;
    help_keywords: string[];
    help_message: string;
  };
}

/** Something created at the provider, and how its review stands right after. */
export interface Submitted {
  id: string;
  verdict: CarrierVerdict;
}

/** The provider refused the request for good: the step fails with `message` as its reason. */
export class CarrierRefusal extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = 'CarrierRefusal';
  }
}
