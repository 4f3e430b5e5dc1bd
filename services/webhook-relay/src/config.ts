import {
  documentLinkConfig,
  documentLinkKeys,
  infrastructureConfig,
  metricsConfig,
  outboundFetchConfig,
  projectionWaitSetting,
  webhookSecretConfig,
  withWebhookEncryptionKeys,
} from '@leadline/runtime';
import { z } from 'zod';
import { DEFAULT_RETRY_DELAYS_SECONDS } from './schedule';

const retryDelays = z
  .string()
  .default(DEFAULT_RETRY_DELAYS_SECONDS.join(','))
  .transform((value, context) => {
    const delays = value
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part.length > 0)
      .map(Number);
    if (delays.some((delay) => !Number.isFinite(delay) || delay < 0)) {
      context.addIssue({ code: 'custom', message: 'Must be comma-separated seconds, such as 30,120,600.' });
      return z.NEVER;
    }
    return delays;
  });

export const relayConfigSchema = infrastructureConfig
  .extend({
    ...metricsConfig,
    /** A 2xx must arrive within this; otherwise the attempt failed. Spec §6: 10 seconds. */
    WEBHOOK_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
    /** Seconds after each failed attempt; one entry per retry. */
    WEBHOOK_RETRY_DELAYS: retryDelays,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: z
      .enum(['true', 'false'])
      .default('false')
      .transform((value) => value === 'true'),
    ...outboundFetchConfig,
    /** Where partners reach the API: the base of signed document URLs in checklist webhooks. */
    PUBLIC_URL: z.url().default('http://127.0.0.1:8080'),
    WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(16),
    /** Attempts in flight to one webhook: a hanging or slow endpoint holds no more of the slots above. */
    WEBHOOK_ENDPOINT_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(2),
    /**
     * How long a claimed delivery stays with the relay that claimed it; past it (that relay died) the
     * delivery is due again. Longer than WEBHOOK_TIMEOUT_MS; the timeout plus 30 s by default.
     */
    WEBHOOK_LEASE_MS: z.coerce.number().int().positive().optional(),
    /** How long fanned-out events are kept for a webhook whose registration the read model shows late. */
    WEBHOOK_BACKFILL_WINDOW_HOURS: z.coerce.number().positive().default(24),
    /** Bound on waiting for the projector after appending webhook.disabled / delivery_failed. */
    PROJECTION_WAIT_MS: projectionWaitSetting,
    /** Bound on each call to Kafka when writing: past it a write answers 503 event_log_unavailable. */
    EVENT_LOG_TIMEOUT_MS: z.coerce.number().int().positive().default(3000),
    ...webhookSecretConfig,
    ...documentLinkConfig,
  })
  .refine(
    (config) => config.WEBHOOK_LEASE_MS === undefined || config.WEBHOOK_LEASE_MS > config.WEBHOOK_TIMEOUT_MS,
    {
      message:
        'WEBHOOK_LEASE_MS must be longer than WEBHOOK_TIMEOUT_MS (an attempt must end within its lease).',
      path: ['WEBHOOK_LEASE_MS'],
    },
  )
  .transform((config, context) => ({
    ...withWebhookEncryptionKeys(config, context),
    DOCUMENT_LINK_KEYS: documentLinkKeys(config, context),
    WEBHOOK_LEASE_MS: config.WEBHOOK_LEASE_MS ?? config.WEBHOOK_TIMEOUT_MS + 30_000,
    // The shared switch opens webhook targets too; the relay's own name keeps working alone.
    WEBHOOK_ALLOW_PRIVATE_TARGETS: config.WEBHOOK_ALLOW_PRIVATE_TARGETS || config.ALLOW_PRIVATE_TARGETS,
  }));
export type RelayConfig = z.infer<typeof relayConfigSchema>;
