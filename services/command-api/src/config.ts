import {
  documentStoreConfig,
  infrastructureConfig,
  outboundFetchConfig,
  webhookSecretConfig,
  withWebhookEncryptionKey,
} from '@leadline/runtime';
import { telephonyConfig } from '@leadline/telephony';
import { z } from 'zod';

export const apiConfigSchema = infrastructureConfig
  .extend({
    ...telephonyConfig.shape,
    PORT: z.coerce.number().int().min(0).max(65535).default(8080),
    HOST: z.string().default('127.0.0.1'),
    /** The local development partner's key; created on start-up when set. */
    PARTNER_API_KEY: z.string().min(16).optional(),
    /** Bound on waiting for the projector before deciding and before answering a write. */
    PROJECTION_WAIT_MS: z.coerce.number().int().positive().default(5000),
    RATE_LIMIT_PER_MINUTE: z.coerce.number().int().positive().default(600),
    ...webhookSecretConfig,
    ...documentStoreConfig,
    ...outboundFetchConfig,
  })
  .transform(withWebhookEncryptionKey);
export type ApiConfig = z.infer<typeof apiConfigSchema>;
