import {
  campaignKeywordReplies,
  type ActionOutcome,
  type Registration,
  type RegistrationAction,
} from '@leadline/domain';
import type { CarrierRegistration, RegistrationRequest } from '@leadline/telephony';

/** What an action needs besides the registration: the account, and the tax id opened on demand. */
export interface ActionContext {
  accountId: string;
  phoneNumber: string;
  companyName: string;
  taxId: () => string;
}

/**
 * Carries out one action at the provider and says what came of it. Throws what the provider threw:
 * a CarrierRefusal (the step fails) or a passing error (the worker tries again later).
 */
export async function carryOut(
  carrier: CarrierRegistration,
  registration: Registration,
  action: RegistrationAction,
  context: ActionContext,
): Promise<ActionOutcome> {
  const request = (): RegistrationRequest => ({
    accountId: context.accountId,
    submissionId: registration.submission_id,
    profile: registration.profile,
    taxId: context.taxId(),
  });
  switch (action.kind) {
    case 'submit_customer_profile': {
      const { id, verdict } = await carrier.submitCustomerProfile(request());
      return { kind: 'created', resource: 'customer_profile', id, verdict };
    }
    case 'check_customer_profile':
      return { kind: 'verdict', verdict: await carrier.customerProfileStatus(action.customer_profile_id) };
    case 'submit_trust_product': {
      const { id, verdict } = await carrier.submitTrustProduct({
        ...request(),
        customerProfileId: action.customer_profile_id,
      });
      return { kind: 'created', resource: 'trust_product', id, verdict };
    }
    case 'register_brand': {
      // The brand is registered from an approved trust product only; until then its review is the news.
      const product = await carrier.trustProductStatus(action.trust_product_id);
      if (product.status !== 'approved') return { kind: 'verdict', verdict: product };
      const { id, verdict } = await carrier.registerBrand({
        ...request(),
        customerProfileId: action.customer_profile_id,
        trustProductId: action.trust_product_id,
      });
      return { kind: 'created', resource: 'brand', id, verdict };
    }
    case 'check_brand':
      return { kind: 'verdict', verdict: await carrier.brandStatus(action.brand_id) };
    case 'create_messaging_service': {
      const { id } = await carrier.createMessagingService({
        accountId: context.accountId,
        submissionId: registration.submission_id,
      });
      return { kind: 'created', resource: 'messaging_service', id, verdict: { status: 'approved' } };
    }
    case 'register_campaign': {
      const { id, verdict } = await carrier.registerCampaign({
        ...request(),
        brandId: action.brand_id,
        messagingServiceId: action.messaging_service_id,
        keywords: campaignKeywordReplies(context.companyName),
      });
      return { kind: 'created', resource: 'campaign', id, verdict };
    }
    case 'check_campaign':
      return {
        kind: 'verdict',
        verdict: await carrier.campaignStatus({
          campaignId: action.campaign_id,
          messagingServiceId: action.messaging_service_id,
        }),
      };
    case 'attach_number': {
      const { id, verdict } = await carrier.attachNumber({
        messagingServiceId: action.messaging_service_id,
        phoneNumber: context.phoneNumber,
      });
      return { kind: 'created', resource: 'phone_number', id, verdict };
    }
    default: {
      const unknownAction: never = action;
      throw new Error(`Unknown action ${JSON.stringify(unknownAction)}`);
    }
  }
}
