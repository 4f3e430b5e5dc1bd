import {
  infrastructureConfig,
  metricsConfig,
  projectionWaitSetting,
  sequenceConfig,
} from '@leadline/runtime';
import { z } from 'zod';

export const sequencerConfigSchema = infrastructureConfig.extend({
  ...metricsConfig,
  ...sequenceConfig,
  PROJECTION_WAIT_MS: projectionWaitSetting,
  /** How often due steps are looked for, in milliseconds. */
  SEQUENCER_POLL_MS: z.coerce.number().int().positive().default(500),
});
export type SequencerConfig = z.infer<typeof sequencerConfigSchema>;
