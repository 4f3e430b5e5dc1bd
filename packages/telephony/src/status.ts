import type { DeliveryStatus } from './port';

/**
 * Twilio's message statuses folded into the five our messages show. `accepted`, `scheduled` and
 * `queued` have not left Twilio yet; `read` (RCS/WhatsApp) implies delivered; `canceled` never left.
 */
export function deliveryStatusOf(providerStatus: string): DeliveryStatus | undefined {
  switch (providerStatus) {
    case 'accepted':
    case 'scheduled':
    case 'queued':
      return 'queued';
    case 'sending':
    case 'sent':
      return 'sent';
    case 'delivered':
    case 'read':
      return 'delivered';
    case 'undelivered':
      return 'undelivered';
    case 'failed':
    case 'canceled':
      return 'failed';
    default:
      return undefined;
  }
}

/**
 * Callbacks can arrive out of order (Twilio posts each transition separately); a status only ever
 * moves forward: queued, then sent, then one of the final three.
 */
export const deliveryStatusRank: Record<DeliveryStatus, number> = {
  queued: 0,
  sent: 1,
  delivered: 2,
  undelivered: 2,
  failed: 2,
};
