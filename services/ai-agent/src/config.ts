import {
  documentStoreConfig,
  infrastructureConfig,
  metricsConfig,
  outboundFetchConfig,
  projectionWaitSetting,
} from '@leadline/runtime';
import { telephonyConfig } from '@leadline/telephony';
import { z } from 'zod';

export const agentConfigSchema = infrastructureConfig.extend({
  ...metricsConfig,
  ...telephonyConfig.shape,
  ...documentStoreConfig,
  ...outboundFetchConfig,
  PROJECTION_WAIT_MS: projectionWaitSetting,
  /** Without a key the deterministic offline responder answers. */
  OPENAI_API_KEY: z.string().min(1).optional(),
  /** Any OpenAI-compatible server; the SDK's default (api.openai.com) otherwise. */
  OPENAI_BASE_URL: z.url().optional(),
  OPENAI_MODEL: z.string().min(1).default('gpt-4.1-mini'),
  /** Quiet time after the last inbound message of a burst before the AI answers it. */
  AI_REPLY_DELAY_SECONDS: z.coerce.number().min(0).max(300).default(5),
  AI_MAX_MESSAGES_PER_LEAD_PER_DAY: z.coerce.number().int().min(0).default(20),
  /** Bound on one model turn, tool rounds included. */
  AI_MODEL_TIMEOUT_SECONDS: z.coerce.number().positive().default(30),
  /** How long a failing model is retried (with backoff) before the conversation is handed off. */
  /** Context pages are fetched again (conditionally) this many hours after the last attempt. */
  CONTEXT_URL_REFRESH_HOURS: z.coerce.number().positive().default(24),
  AI_UNAVAILABLE_AFTER_SECONDS: z.coerce.number().min(0).default(300),
});
export type AgentConfig = z.infer<typeof agentConfigSchema>;
