import {
  infrastructureConfig,
  metricsConfig,
  projectionWaitSetting,
  webhookSecretConfig,
  withWebhookEncryptionKeys,
} from '@leadline/runtime';
import { telephonyConfig, twilioCredentials } from '@leadline/telephony';
import { z } from 'zod';

const seconds = (fallback: number) => z.coerce.number().positive().default(fallback);

export const registrationConfigSchema = infrastructureConfig
  .extend({
    ...metricsConfig,
    ...telephonyConfig.shape,
    // The keys that seal webhook secrets seal the tax ids too: the same list as the command API's.
    ...webhookSecretConfig,
    PROJECTION_WAIT_MS: projectionWaitSetting,
    EVENT_LOG_TIMEOUT_MS: z.coerce.number().int().positive().default(3000),
    /** How often the worker looks for registrations due. */
    REGISTRATION_POLL_MS: z.coerce.number().int().positive().default(1000),
    /** Registrations worked on at once (Twilio asks ISVs for about one registration request a second). */
    REGISTRATION_CONCURRENCY: z.coerce.number().int().min(1).max(16).default(2),
    /** The first look at a step under review, and the longest wait between two looks. */
    REGISTRATION_CHECK_MIN_SECONDS: seconds(15),
    REGISTRATION_CHECK_MAX_SECONDS: seconds(3600),
    /** The first retry after a failed call (an outage), doubling up to the most. */
    REGISTRATION_RETRY_BASE_SECONDS: seconds(5),
    REGISTRATION_RETRY_MAX_SECONDS: seconds(900),
    /** Bound on one unit of work at the provider (submitting a profile is a dozen requests). */
    REGISTRATION_TIMEOUT_SECONDS: seconds(60),
    /** The local simulation: how long each review takes before it is decided. */
    REGISTRATION_LOCAL_DELAY_SECONDS: z.coerce.number().min(0).default(10),
    /** Twilio: our own approved primary customer profile (`BU…`), which each customer's profile is tied to. */
    TWILIO_PRIMARY_PROFILE_SID: z
      .string()
      .regex(/^BU[0-9a-fA-F]{32}$/, 'A Trust Hub customer profile sid (BU followed by 32 hex digits).')
      .optional(),
    /** Twilio: our address Trust Hub writes to about each profile's review. */
    TWILIO_REGISTRATION_EMAIL: z.email().optional(),
  })
  .superRefine((config, context) => {
    if (!twilioCredentials(config)) return;
    for (const setting of ['TWILIO_PRIMARY_PROFILE_SID', 'TWILIO_REGISTRATION_EMAIL'] as const) {
      if (!config[setting])
        context.addIssue({
          code: 'custom',
          path: [setting],
          message: 'Required with Twilio: registrations go through our Trust Hub primary profile.',
        });
    }
  })
  .transform((config, context) => withWebhookEncryptionKeys(config, context));
export type RegistrationConfig = z.infer<typeof registrationConfigSchema>;
