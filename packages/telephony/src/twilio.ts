import twilio from 'twilio';
import type { NumberInventory, NumberProvider, SmsSender } from './port';
import { SmsRejectedError } from './port';
import { deliveryStatusOf } from './status';

export interface TwilioOptions {
  accountSid: string;
  authToken: string;
  /** Where the webhooks live: inbound SMS at `/twilio/sms`, status callbacks at `/twilio/status`. */
  publicUrl: string;
  /** Replaces https://api.twilio.com (tests aim the real client at a local fake of the REST API). */
  apiBaseUrl?: string | undefined;
  /** Another public base URL Twilio falls back to for inbound SMS (`PUBLIC_URL` by default). */
  fallbackUrl?: string | undefined;
  /** ISO country code of the numbers to buy. */
  country?: string;
}

const TWILIO_DOMAIN = /^https:\/\/([a-z0-9-]+)\.twilio\.com(?=\/|$)/;

type RequestOptions<TData> = Parameters<twilio.RequestClient['request']>[0] & { data?: TData };

/**
 * twilio-node builds absolute URLs on its own domains; its documented extension point is the HTTP
 * client, so a custom base URL is a request client that rewrites the origin of each request. The REST
 * API (api.twilio.com) keeps the base's root; another product's domain (trusthub, messaging) goes
 * under `/{its name}`, so one local server stands in for all of them.
 */
class RebasedRequestClient extends twilio.RequestClient {
  constructor(private readonly baseUrl: string) {
    super({ timeout: 15_000 });
  }

  override request<TData>(opts: RequestOptions<TData>) {
    const uri = opts.uri.replace(TWILIO_DOMAIN, (_, domain: string) =>
      domain === 'api' ? this.baseUrl : `${this.baseUrl}/${domain}`,
    );
    return super.request<TData>({ ...opts, uri });
  }
}

export function twilioClient(options: TwilioOptions): twilio.Twilio {
  return twilio(options.accountSid, options.authToken, {
    ...(options.apiBaseUrl && {
      httpClient: new RebasedRequestClient(options.apiBaseUrl.replace(/\/$/, '')),
    }),
  });
}

/**
 * Twilio's connection overrides, a URL fragment on every webhook URL we give it (Twilio reads the
 * fragment and never sends it, so signatures are unchanged): by default Twilio retries no 5xx, and a
 * message it cannot deliver to us is gone. Connect within 3 s, answer within 5 s, up to 3 retries on
 * a 5xx, a failed connection or a timeout, all within 15 s (Twilio's own HTTP timeout); then the
 * fallback URL gets the same.
 */
export const WEBHOOK_CONNECTION_OVERRIDES = 'ct=3000&rt=5000&tt=15000&rc=3&rp=ct,rt,5xx';

const withOverrides = (url: string) => `${url}#${WEBHOOK_CONNECTION_OVERRIDES}`;
const base = (publicUrl: string) => publicUrl.replace(/\/$/, '');

/**
 * The status callback URL of a message: it carries our id, so a callback can settle an unconfirmed
 * send, and its account, so the report is appended without waiting for any read model.
 */
export const statusCallbackUrl = (publicUrl: string, messageId: string, accountId?: string) =>
  withOverrides(
    `${base(publicUrl)}/twilio/status?message_id=${encodeURIComponent(messageId)}` +
      (accountId ? `&account_id=${encodeURIComponent(accountId)}` : ''),
  );

export const inboundSmsUrl = (publicUrl: string) => withOverrides(`${base(publicUrl)}/twilio/sms`);

/**
 * Where Twilio posts an inbound SMS when the primary URL failed even after its retries: the same
 * route (deduplicated by MessageSid), so a deployment behind a second address can set PUBLIC_URL's
 * twin here; by default it is the primary URL again, one more chance after a short outage.
 */
export const inboundSmsFallbackUrl = (publicUrl: string, fallbackUrl?: string) =>
  withOverrides(`${base(fallbackUrl ?? publicUrl)}/twilio/sms`);

/** Twilio's 4xx answers are final refusals (invalid number, opted-out recipient 21610...). */
const isRefusal = (error: unknown): error is twilio.RestException =>
  error instanceof twilio.RestException && error.status >= 400 && error.status < 500 && error.status !== 429;

/**
 * The friendly name of a number we bought, before the id of the account it was bought for: how
 * reconciliation tells our purchases (and their accounts) from numbers bought in Twilio's console.
 */
const PROVISIONED_FOR = 'leadline account ';

export function createTwilioProvider(options: TwilioOptions): NumberProvider & NumberInventory & SmsSender {
  const client = twilioClient(options);
  return {
    async provisionNumber(accountId) {
      const [available] = await client
        .availablePhoneNumbers(options.country ?? 'US')
        .local.list({ smsEnabled: true, limit: 1 });
      if (!available) throw new Error('Twilio has no SMS-capable number available to buy');
      const bought = await client.incomingPhoneNumbers.create({
        phoneNumber: available.phoneNumber,
        smsUrl: inboundSmsUrl(options.publicUrl),
        smsMethod: 'POST',
        smsFallbackUrl: inboundSmsFallbackUrl(options.publicUrl, options.fallbackUrl),
        smsFallbackMethod: 'POST',
        friendlyName: `${PROVISIONED_FOR}${accountId}`,
      });
      return { phoneNumber: bought.phoneNumber, providerId: bought.sid };
    },

    async isOwnNumber(phoneNumber) {
      const [owned] = await client.incomingPhoneNumbers.list({ phoneNumber, limit: 1 });
      return owned?.phoneNumber === phoneNumber;
    },

    async releaseNumber(number) {
      try {
        await client.incomingPhoneNumbers(number.providerId).remove();
      } catch (error) {
        // Already released (by a retry of this call, say): what was asked for is done.
        if (!(error instanceof twilio.RestException && error.status === 404)) throw error;
      }
    },

    async listProvisioned() {
      // Every page (twilio-node follows Twilio's paging until the last one).
      const owned = await client.incomingPhoneNumbers.list({ pageSize: 1000 });
      return owned.flatMap((number) =>
        number.friendlyName.startsWith(PROVISIONED_FOR)
          ? [
              {
                phoneNumber: number.phoneNumber,
                providerId: number.sid,
                accountId: number.friendlyName.slice(PROVISIONED_FOR.length),
                provisionedAt: number.dateCreated,
              },
            ]
          : [],
      );
    },

    async send(message) {
      try {
        const created = await client.messages.create({
          from: message.from,
          to: message.to,
          body: message.body,
          statusCallback: statusCallbackUrl(options.publicUrl, message.messageId, message.accountId),
        });
        return { providerMessageId: created.sid, status: deliveryStatusOf(created.status) ?? 'queued' };
      } catch (error) {
        if (isRefusal(error))
          throw new SmsRejectedError(error.message, `twilio_${error.code ?? error.status}`);
        throw error;
      }
    },
  };
}

/** Twilio's own check of `X-Twilio-Signature` (HMAC-SHA1 over the URL and the sorted form fields). */
export function validTwilioSignature(
  authToken: string,
  signature: string | undefined,
  url: string,
  params: Record<string, string>,
): boolean {
  return signature !== undefined && twilio.validateRequest(authToken, signature, url, params);
}
