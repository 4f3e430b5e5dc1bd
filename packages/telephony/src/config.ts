import { z } from 'zod';

/**
 * Telephony settings, shared by every service that talks to the provider. Without both Twilio
 * credentials the local provider is used.
 */
export const telephonyConfig = z.object({
  /** Where Twilio reaches our webhooks: `{PUBLIC_URL}/twilio/sms` and `{PUBLIC_URL}/twilio/status`. */
  PUBLIC_URL: z.url().default('http://127.0.0.1:8080'),
  TWILIO_ACCOUNT_SID: z.string().min(1).optional(),
  TWILIO_AUTH_TOKEN: z.string().min(1).optional(),
  /** Another base URL for Twilio's REST API (a local fake in tests); https://api.twilio.com otherwise. */
  TWILIO_API_BASE_URL: z.url().optional(),
  /**
   * The public base URL Twilio falls back to for inbound SMS when `PUBLIC_URL` fails after retries
   * (numbers bought from then on get `{TWILIO_SMS_FALLBACK_URL}/twilio/sms`); `PUBLIC_URL` by default.
   */
  TWILIO_SMS_FALLBACK_URL: z.url().optional(),
});
export type TelephonyConfig = z.infer<typeof telephonyConfig>;

/** The configured Twilio credentials, or undefined for the local provider. */
export function twilioCredentials(config: TelephonyConfig) {
  const { TWILIO_ACCOUNT_SID: accountSid, TWILIO_AUTH_TOKEN: authToken } = config;
  if (!accountSid || !authToken) return undefined;
  return {
    accountSid,
    authToken,
    apiBaseUrl: config.TWILIO_API_BASE_URL,
    publicUrl: config.PUBLIC_URL,
    fallbackUrl: config.TWILIO_SMS_FALLBACK_URL,
  };
}

/**
 * Without TWILIO_AUTH_TOKEN anyone can post to /twilio/sms and /twilio/status (no signature check),
 * and numbers and SMS go through the local provider, which reaches no phone.
 */
export function twilioRisks(config: TelephonyConfig) {
  return config.TWILIO_AUTH_TOKEN
    ? []
    : [
        {
          setting: 'TWILIO_AUTH_TOKEN',
          risk:
            'not set: Twilio webhooks are accepted without a signature and the local provider ' +
            '(which sends nothing) stands in for Twilio',
        },
      ];
}
