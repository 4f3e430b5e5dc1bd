import {
  documentLinkConfig,
  documentLinkKeys,
  documentStoreConfig,
  infrastructureConfig,
  outboundFetchConfig,
  projectionWaitSetting,
  sequenceConfig,
  webhookSecretConfig,
  withWebhookEncryptionKeys,
} from '@leadline/runtime';
import { telephonyConfig } from '@leadline/telephony';
import { z } from 'zod';

export const apiConfigSchema = infrastructureConfig
  .extend({
    ...telephonyConfig.shape,
    PORT: z.coerce.number().int().min(0).max(65535).default(8080),
    HOST: z.string().default('127.0.0.1'),
    /** Where the embedded dashboard is served from; PUBLIC_URL when unset. */
    APP_URL: z.url({ protocol: /^https?$/ }).optional(),
    /** The local development partner's key; created on start-up when set. */
    PARTNER_API_KEY: z.string().min(16).optional(),
    /** Bound on waiting for the projector before deciding and before answering a write. */
    PROJECTION_WAIT_MS: projectionWaitSetting,
    /** Bound on each call to Kafka when writing: past it a write answers 503 event_log_unavailable. */
    EVENT_LOG_TIMEOUT_MS: z.coerce.number().int().positive().default(3000),
    RATE_LIMIT_PER_MINUTE: z.coerce.number().int().positive().default(600),
    AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().positive().default(30),
    ...sequenceConfig,
    ...webhookSecretConfig,
    ...documentLinkConfig,
    ...documentStoreConfig,
    ...outboundFetchConfig,
  })
  // Each setting resolved on its own, so a production start names every missing key at once.
  .transform((config, context) => ({
    ...withWebhookEncryptionKeys(config, context),
    DOCUMENT_LINK_KEYS: documentLinkKeys(config, context),
  }));
export type ApiConfig = z.infer<typeof apiConfigSchema>;
