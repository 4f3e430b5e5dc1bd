import type { Registration, RegistrationStep } from './state';

/**
 * The next thing to ask the provider for a registration. Each is one unit of work, decided from the
 * registration alone, called outside any transaction or lock, and its outcome recorded afterwards.
 */
export type RegistrationAction =
  /** Create the business's customer profile, fill it, and submit it for review. */
  | { kind: 'submit_customer_profile' }
  /** Create the messaging profile the brand is registered from (the A2P trust product), and submit it. */
  | { kind: 'submit_trust_product'; customer_profile_id: string }
  /** Once the trust product is approved, register the brand (until then, look at the trust product). */
  | { kind: 'register_brand'; customer_profile_id: string; trust_product_id: string }
  /** The messaging service the campaign is registered on and the number joins. */
  | { kind: 'create_messaging_service' }
  | { kind: 'register_campaign'; brand_id: string; messaging_service_id: string }
  | { kind: 'attach_number'; messaging_service_id: string }
  /** Ask the carrier how its review of a step stands. */
  | { kind: 'check_customer_profile'; customer_profile_id: string }
  | { kind: 'check_brand'; brand_id: string }
  | { kind: 'check_campaign'; campaign_id: string; messaging_service_id: string };

/** The step an action moves. */
export function stepOf(action: RegistrationAction): RegistrationStep {
  switch (action.kind) {
    case 'submit_customer_profile':
    case 'check_customer_profile':
      return 'customer_profile';
    case 'submit_trust_product':
    case 'register_brand':
    case 'check_brand':
      return 'brand';
    case 'create_messaging_service':
    case 'register_campaign':
    case 'check_campaign':
      return 'campaign';
    case 'attach_number':
      return 'number';
    default: {
      const unknownAction: never = action;
      throw new Error(`Unknown action ${JSON.stringify(unknownAction)}`);
    }
  }
}

/**
 * Whether an action waits on a review (it is due on the check schedule) rather than being work that
 * can be done at once. Registering the brand waits on the trust product's review first.
 */
export const waitsOnReview = (action: RegistrationAction) =>
  action.kind.startsWith('check_') || action.kind === 'register_brand';

/**
 * The next action, or undefined when there is nothing to do: every step approved, or one failed (a
 * new submission starts again). Steps go in order: each starts once the one before is approved.
 */
export function nextRegistrationAction(registration: Registration): RegistrationAction | undefined {
  const { steps, resources } = registration;
  if (Object.values(steps).some((step) => step.status === 'failed')) return undefined;

  const profile = steps.customer_profile.status;
  if (profile === 'draft' || !resources.customer_profile) return { kind: 'submit_customer_profile' };
  if (profile === 'pending')
    return { kind: 'check_customer_profile', customer_profile_id: resources.customer_profile };

  if (steps.brand.status !== 'approved') {
    if (!resources.trust_product)
      return { kind: 'submit_trust_product', customer_profile_id: resources.customer_profile };
    if (!resources.brand)
      return {
        kind: 'register_brand',
        customer_profile_id: resources.customer_profile,
        trust_product_id: resources.trust_product,
      };
    return { kind: 'check_brand', brand_id: resources.brand };
  }

  if (steps.campaign.status !== 'approved') {
    if (!resources.messaging_service) return { kind: 'create_messaging_service' };
    if (!resources.campaign)
      return {
        kind: 'register_campaign',
        brand_id: resources.brand!,
        messaging_service_id: resources.messaging_service,
      };
    return {
      kind: 'check_campaign',
      campaign_id: resources.campaign,
      messaging_service_id: resources.messaging_service,
    };
  }

  if (steps.number.status !== 'approved')
    return { kind: 'attach_number', messaging_service_id: resources.messaging_service! };
  return undefined;
}
