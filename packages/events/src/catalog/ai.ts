import { z } from 'zod';
import { defineEvent } from '../define';
import { sequenceStepRefSchema } from './sequences';

/**
 * The AI agent's own record of what it did with a turn: one per inbound burst (keyed by the inbound
 * message ids) or per AI sequence step. Deciding "not yet handled" against these under the account's
 * lock is what makes a burst answered exactly once, whatever the redeliveries, restarts or replicas.
 */
export const aiTurnOutcomes = ['replied', 'silent', 'handoff', 'skipped'] as const;

export const aiTurnCompleted = defineEvent('ai.turn_completed', {
  topic: 'account',
  data: z.object({
    phone: z.string(),
    /** The inbound messages answered together (empty for a sequence step). */
    message_ids: z.array(z.string()),
    sequence_step: sequenceStepRefSchema.nullable(),
    outcome: z.enum(aiTurnOutcomes),
    /** Why the turn was skipped or handed off (`ai_paused`, `daily_cap`, `ai_unavailable`…). */
    reason: z.string().nullable(),
    /** The reply requested, when there was one. */
    reply_message_id: z.string().nullable(),
    /** The conversation summary after this turn (Get Lead's `conversation.summary`). */
    summary: z.string().nullable(),
    /** `model` (OPENAI_MODEL) or `offline` (the deterministic responder). */
    responder: z.string(),
  }),
});

const promptFields = {
  role_persona: z.string().nullable(),
  tone_voice: z.string().nullable(),
  response_style: z.string().nullable(),
  conversation_rules: z.string().nullable(),
  special_instructions: z.string().nullable(),
};

/** The account's prompt settings, replaced as a whole (the PATCH body names the mode). */
export const aiPromptUpdated = defineEvent('ai.prompt_updated', {
  topic: 'account',
  data: z.discriminatedUnion('mode', [
    z.object({ mode: z.literal('guided'), ...promptFields }),
    z.object({ mode: z.literal('advanced'), system_prompt: z.string() }),
  ]),
});

/** The keys a turn is remembered by: each inbound message id, or the sequence step. */
export function turnKeys(data: {
  message_ids: readonly string[];
  sequence_step: { enrollment_id: string; step_order: number } | null;
}): string[] {
  return data.sequence_step
    ? [`step:${data.sequence_step.enrollment_id}:${data.sequence_step.step_order}`]
    : data.message_ids.map((id) => `message:${id}`);
}

/** A `.txt` or `.md` file of company context; its text is on the log (at most 100 KB). */
export const contextFileUploaded = defineEvent('context_file.uploaded', {
  topic: 'account',
  data: z.object({
    file_id: z.string(),
    name: z.string(),
    file_type: z.enum(['txt', 'md']),
    file_size: z.number().int().nonnegative(),
    content: z.string(),
  }),
});

export const contextFileDeleted = defineEvent('context_file.deleted', {
  topic: 'account',
  data: z.object({ file_id: z.string() }),
});

export const contextUrlAdded = defineEvent('context_url.added', {
  topic: 'account',
  data: z.object({ url_id: z.string(), url: z.string() }),
});

/** A page fetch succeeded: new main text, or `unchanged` (304, or the same text again). */
export const contextUrlFetched = defineEvent('context_url.fetched', {
  topic: 'account',
  data: z.object({
    url_id: z.string(),
    unchanged: z.boolean(),
    title: z.string().nullable(),
    /** Null when unchanged. */
    content: z.string().nullable(),
    content_hash: z.string().nullable(),
    etag: z.string().nullable(),
    last_modified: z.string().nullable(),
  }),
});

/** A page fetch failed; the last good content stays in use. */
export const contextUrlFetchFailed = defineEvent('context_url.fetch_failed', {
  topic: 'account',
  data: z.object({ url_id: z.string(), error: z.string() }),
});

export const contextUrlDeleted = defineEvent('context_url.deleted', {
  topic: 'account',
  data: z.object({ url_id: z.string() }),
});
