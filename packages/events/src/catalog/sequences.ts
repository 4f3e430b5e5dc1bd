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

/**
 * Sequences, their enrollments and their steps. Steps are versioned: `steps_version` grows by one each
 * time a sequence's steps change, and an enrollment keeps the version it started with, so updating a
 * sequence never changes what leads already enrolled receive.
 */

export const sequenceStepTypes = ['fixed', 'ai'] as const;

export const sequenceStepSchema = z.object({
  type: z.enum(sequenceStepTypes),
  /** The template of a fixed step; null for AI steps. */
  message: z.string().nullable(),
  /** What the AI should say in an AI step; null for fixed steps. */
  instructions: z.string().nullable(),
  delay_hours: z.number().int().nonnegative(),
  skip_if_replied: z.boolean(),
});

export const sequenceCreated = defineEvent('sequence.created', {
  topic: 'account',
  data: z.object({
    sequence_id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    is_active: z.boolean(),
    is_default: z.boolean(),
    steps: z.array(sequenceStepSchema),
    steps_version: z.number().int().positive(),
  }),
});

/** Only the fields that changed; new `steps` come with their new `steps_version`. */
export const sequenceUpdated = defineEvent('sequence.updated', {
  topic: 'account',
  data: z.object({
    sequence_id: z.string(),
    changes: z.object({
      name: z.string().optional(),
      description: z.string().nullable().optional(),
      is_active: z.boolean().optional(),
      /** False when another sequence of the account became the default. */
      is_default: z.boolean().optional(),
      steps: z.array(sequenceStepSchema).optional(),
      steps_version: z.number().int().positive().optional(),
    }),
  }),
});

/** The sequence is gone; its active enrollments are cancelled (`cancelled_enrollments` of them). */
export const sequenceDeleted = defineEvent('sequence.deleted', {
  topic: 'account',
  data: z.object({ sequence_id: z.string(), cancelled_enrollments: z.number().int().nonnegative() }),
});

const enrollmentRef = {
  enrollment_id: z.string(),
  sequence_id: z.string(),
  lead_id: z.string(),
  phone: z.string(),
};

/**
 * A lead starts a sequence at step 0 (`enrolled`), or starts it again after a cancelled, stopped or
 * completed enrollment (`reactivated`, a new enrollment id). `next_step_at` is when step 0 is due,
 * already moved into the lead's sending window.
 */
export const sequenceEnrolled = defineEvent('sequence.enrolled', {
  topic: 'account',
  data: z.object({
    ...enrollmentRef,
    action: z.enum(['enrolled', 'reactivated']),
    steps_version: z.number().int().positive(),
    total_steps: z.number().int().positive(),
    next_step_at: z.iso.datetime(),
  }),
});

/**
 * Leads imported with `auto_sequence` start the default sequence at step 0: one event for the whole
 * import, so a bulk import of 1,000 leads stays within one record batch of the log.
 */
export const sequenceLeadsEnrolled = defineEvent('sequence.leads_enrolled', {
  topic: 'account',
  data: z.object({
    sequence_id: z.string(),
    steps_version: z.number().int().positive(),
    total_steps: z.number().int().positive(),
    enrollments: z.array(
      z.object({
        enrollment_id: z.string(),
        lead_id: z.string(),
        phone: z.string(),
        next_step_at: z.iso.datetime(),
      }),
    ),
  }),
});

/** A step went out (its `message.outbound_requested` is `message_id`); `next_step_at` is null after the last. */
export const sequenceStepSent = defineEvent('sequence.step_sent', {
  topic: 'account',
  data: z.object({
    ...enrollmentRef,
    step_order: z.number().int().nonnegative(),
    message_id: z.string(),
    next_step_at: z.iso.datetime().nullable(),
  }),
});

/**
 * A step was passed over: the lead replied (`replied`, a step with `skip_if_replied`) or the AI agent
 * could not write it (`ai_failed`). The enrollment moves on as if it had been sent.
 */
export const sequenceStepSkipped = defineEvent('sequence.step_skipped', {
  topic: 'account',
  data: z.object({
    ...enrollmentRef,
    step_order: z.number().int().nonnegative(),
    reason: z.enum(['replied', 'ai_failed']),
    next_step_at: z.iso.datetime().nullable(),
  }),
});

/** A due step waits for the lead's sending window (quiet hours) to open at `next_step_at`. */
export const sequenceStepDeferred = defineEvent('sequence.step_deferred', {
  topic: 'account',
  data: z.object({
    ...enrollmentRef,
    step_order: z.number().int().nonnegative(),
    reason: z.enum(['quiet_hours']),
    next_step_at: z.iso.datetime(),
  }),
});

/**
 * The audit record of a held step: a due step, or an AI-written one at the moment it was to be sent,
 * that the law or the account's window does not let go out now (`step_deferred` on older logs, for
 * quiet hours only). `reason`: `quiet_hours` (the account's window), `state_hours`, `state_sunday`,
 * `state_holiday` (the lead's state's law, `state`, presumed from the area code) or `frequency_cap`
 * (the state's cap on proactive messages per 24 hours). `zone` is the lead's zone the rule was read in;
 * `next_step_at` the earliest instant every rule allows, when the step is decided again. `stage`:
 * `due` when the sequencer held the step, `ai_send` when the AI agent held the message it wrote.
 */
export const sequenceStepHeld = defineEvent('sequence.step_held', {
  topic: 'account',
  data: z.object({
    ...enrollmentRef,
    step_order: z.number().int().nonnegative(),
    stage: z.enum(['due', 'ai_send']),
    reason: z.enum(['quiet_hours', 'state_hours', 'state_sunday', 'state_holiday', 'frequency_cap']),
    state: z.string().nullable(),
    zone: z.string(),
    next_step_at: z.iso.datetime(),
  }),
});

/**
 * A due step that may not go out until a condition changes rather than a time passes: `no_consent`, the
 * account requires recorded consent for proactive messages (`consent_required`) and the lead's number
 * has none (never granted, or revoked). The enrollment waits (`hold_reason: no_consent`) until consent is
 * granted or the account stops requiring it; then the step is overdue and goes out at once, inside the
 * sending window. `stage`: `due` when the sequencer held the step, `ai_send` when the AI agent held
 * the message it was about to send.
 */
export const sequenceStepHeldForConsent = defineEvent('sequence.step_held_for_consent', {
  topic: 'account',
  data: z.object({
    ...enrollmentRef,
    step_order: z.number().int().nonnegative(),
    stage: z.enum(['due', 'ai_send']),
    reason: z.enum(['no_consent']),
    /** When the step fell due: once released it is overdue since then and goes out at once. */
    due_at: z.iso.datetime(),
  }),
});

/** The last step was sent or skipped: what the partner's `sequence.completed` webhook carries. */
export const sequenceCompleted = defineEvent('sequence.completed', {
  topic: 'account',
  data: z.object({
    ...enrollmentRef,
    lead_name: z.string().nullable(),
    sequence_name: z.string(),
    total_steps: z.number().int().positive(),
  }),
});

/** A lead with an active enrollment sent a message: the partner's `sequence.reply_received` webhook. */
export const sequenceReplyReceived = defineEvent('sequence.reply_received', {
  topic: 'account',
  data: z.object({
    ...enrollmentRef,
    lead_name: z.string().nullable(),
    sequence_name: z.string(),
    /** The step the lead is at: how many steps were sent or skipped before the reply. */
    current_step: z.number().int().nonnegative(),
    total_steps: z.number().int().positive(),
    message_id: z.string(),
    message_body: z.string(),
  }),
});

/**
 * A lead was taken out of a sequence by hand (`POST …/sequences/:sequence_id/unenroll`): its active
 * enrollment ends as `cancelled` and nothing more is sent from it; enrolling again starts over.
 */
export const sequenceUnenrolled = defineEvent('sequence.unenrolled', {
  topic: 'account',
  data: z.object({ ...enrollmentRef }),
});
