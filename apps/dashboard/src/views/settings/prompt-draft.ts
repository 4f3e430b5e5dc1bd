import type { Schemas } from '../../lib/api';

export type PromptSettings = Schemas['PromptSettings'];

/** The five parts a guided prompt is combined from: field, label, placeholder. */
export const guidedFields = [
  ['role_persona', 'Role and persona', 'Who the assistant is, e.g. Maya, the loan assistant of {{company}}'],
  ['tone_voice', 'Tone and voice', 'How it sounds, e.g. warm, plain-spoken, never pushy'],
  ['response_style', 'Response style', 'How it writes, e.g. one or two short sentences'],
  ['conversation_rules', 'Conversation rules', 'What it must and must not do'],
  ['special_instructions', 'Special instructions', 'Anything else'],
] as const;

type GuidedField = (typeof guidedFields)[number][0];

/** The prompt as it is being edited: every text present (empty rather than null), both modes kept. */
export type PromptDraft = { mode: 'guided' | 'advanced'; system_prompt: string } & Record<
  GuidedField,
  string
>;

export const toPromptDraft = (settings: PromptSettings): PromptDraft => ({
  mode: settings.mode,
  system_prompt: settings.system_prompt ?? '',
  role_persona: settings.role_persona ?? '',
  tone_voice: settings.tone_voice ?? '',
  response_style: settings.response_style ?? '',
  conversation_rules: settings.conversation_rules ?? '',
  special_instructions: settings.special_instructions ?? '',
});

/** What PATCH takes: guided fields left empty are cleared. */
export const promptBody = (draft: PromptDraft): Schemas['PromptSettingsUpdate'] =>
  draft.mode === 'advanced'
    ? { mode: 'advanced', system_prompt: draft.system_prompt.trim() }
    : {
        mode: 'guided',
        ...Object.fromEntries(guidedFields.map(([field]) => [field, draft[field].trim() || null])),
      };
