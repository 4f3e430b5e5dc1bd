import { z } from 'zod';
import { defineEvent } from '../define';

/**
 * The contract between the sequencer and the AI agent. The sequencer is the only code that decides
 * when a step is due; for an AI step it appends `sequence.ai_step_requested` (inside the lead's
 * sending window) and waits. The AI agent writes the message from the step's `instructions`, the
 * conversation and the checklist, and requests it through the send decider with `source: sequence`
 * and `sequence_step` naming the step, or appends `sequence.ai_step_failed` when it cannot. The
 * sequencer advances the enrollment on either.
 */

/** Which enrollment step an outbound message carries out. */
export const sequenceStepRefSchema = z.object({
  enrollment_id: z.string(),
  sequence_id: z.string(),
  step_order: z.number().int().nonnegative(),
});

export const sequenceAiStepRequested = defineEvent('sequence.ai_step_requested', {
  topic: 'account',
  data: sequenceStepRefSchema.extend({
    phone: z.string(),
    instructions: z.string(),
  }),
});

export const sequenceAiStepFailed = defineEvent('sequence.ai_step_failed', {
  topic: 'account',
  data: sequenceStepRefSchema.extend({
    phone: z.string(),
    /** Why no message was written: `ai_unavailable`, `lead_opted_out`, `account_deactivated`… */
    reason: z.string(),
  }),
});
