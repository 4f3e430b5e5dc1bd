import { infrastructureConfig, projectionWaitSetting } from '@leadline/runtime';
import { z } from 'zod';

/** The inbound decider decides through the command bus, with the same bounds as the API's writes. */
export const inboundDeciderConfigSchema = infrastructureConfig.extend({
  PROJECTION_WAIT_MS: projectionWaitSetting,
  EVENT_LOG_TIMEOUT_MS: z.coerce.number().int().positive().default(3000),
  /** Accounts whose inbound SMS are decided at once (each account's in order). */
  INBOUND_DECIDER_CONCURRENCY: z.coerce.number().int().min(1).max(32).default(8),
});
