import { useEffect, useState } from 'react';
import { useCan, useDashboard } from '../../context';
import { dataOf, type Schemas } from '../../lib/api';

type PromptSettings = Schemas['PromptSettings'];

const guidedFields = [
  ['role_persona', 'Role and persona', 'Who the assistant is, e.g. Maya, the loan assistant of {{company}}'],
  ['tone_voice', 'Tone and voice', 'How it sounds, e.g. warm, plain-spoken, never pushy'],
  ['response_style', 'Response style', 'How it writes, e.g. one or two short sentences'],
  ['conversation_rules', 'Conversation rules', 'What it must and must not do'],
  ['special_instructions', 'Special instructions', 'Anything else'],
] as const;

type GuidedField = (typeof guidedFields)[number][0];
type PromptDraft = { mode: 'guided' | 'advanced'; system_prompt: string } & Record<GuidedField, string>;

const toPromptDraft = (settings: PromptSettings): PromptDraft => ({
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

/**
 * The assistant's prompt, guided (five parts combined) or advanced (the whole system prompt), and the
 * prompt as the model sees it, re-read whenever `contextVersion` says the checklist or the company
 * context changed.
 */
export function Prompt({ contextVersion }: { contextVersion: number }) {
  const { api, session } = useDashboard();
  const canManage = useCan('manage_settings');
  const [settings, setSettings] = useState<PromptSettings | null>(null);
  const [draft, setDraft] = useState<PromptDraft | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const [busy, setBusy] = useState(false);
  const id = session.account.id;

  useEffect(() => {
    api
      .GET('/accounts/{id}/settings/prompt', { params: { path: { id } } })
      .then(dataOf)
      .then((loaded) => {
        setSettings(loaded);
        setDraft(toPromptDraft(loaded));
      })
      .catch((failure: Error) => setError(failure.message));
  }, [api, id]);
  useEffect(() => {
    // Only the composed prompt changes with the context: a draft being edited is left as it is.
    if (contextVersion > 0) {
      void api
        .GET('/accounts/{id}/settings/prompt', { params: { path: { id } } })
        .then(dataOf)
        .then(setSettings, () => undefined);
    }
  }, [api, id, contextVersion]);

  if (!draft || !settings) {
    return (
      <section className="panel" aria-label="AI prompt">
        <h2>Assistant</h2>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
      </section>
    );
  }
  const edit = (change: Partial<PromptDraft>) => {
    setSaved(false);
    setDraft({ ...draft, ...change });
  };
  const save = async () => {
    setBusy(true);
    setError(null);
    try {
      const next = dataOf(
        await api.PATCH('/accounts/{id}/settings/prompt', {
          params: { path: { id } },
          body: promptBody(draft),
        }),
      );
      setSettings(next);
      setDraft(toPromptDraft(next));
      setSaved(true);
    } catch (failure) {
      setError((failure as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="panel" aria-label="AI prompt">
      <h2>Assistant</h2>
      <p className="sub">
        How the assistant talks to leads. The checklist and your company context are added to it
        automatically.
      </p>
      <form
        className="prompt"
        onSubmit={(event) => {
          event.preventDefault();
          void save();
        }}
      >
        <div className="segmented" role="radiogroup" aria-label="Prompt mode">
          {(['guided', 'advanced'] as const).map((mode) => (
            <label key={mode} className={draft.mode === mode ? 'segment active' : 'segment'}>
              <input
                type="radio"
                name="mode"
                value={mode}
                checked={draft.mode === mode}
                disabled={!canManage}
                onChange={() => edit({ mode })}
              />
              {mode === 'guided' ? 'Guided' : 'Advanced'}
            </label>
          ))}
        </div>
        {draft.mode === 'guided' ? (
          guidedFields.map(([field, label, placeholder]) => (
            <label key={field} className="field">
              {label}
              <textarea
                aria-label={label}
                rows={2}
                maxLength={4000}
                placeholder={placeholder}
                readOnly={!canManage}
                value={draft[field]}
                onChange={(event) => edit({ [field]: event.target.value })}
              />
            </label>
          ))
        ) : (
          <label className="field">
            System prompt
            <textarea
              aria-label="System prompt"
              rows={10}
              maxLength={20000}
              placeholder="The whole system prompt; {{company}} is replaced by your company name"
              readOnly={!canManage}
              value={draft.system_prompt}
              onChange={(event) => edit({ system_prompt: event.target.value })}
            />
          </label>
        )}
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        {canManage && (
          <div className="actions">
            <button
              type="submit"
              disabled={busy || (draft.mode === 'advanced' && !draft.system_prompt.trim())}
            >
              Save prompt
            </button>
            {saved && (
              <span className="notice-ok" role="status">
                Saved
              </span>
            )}
          </div>
        )}
        <details className="composed">
          <summary>Prompt as the assistant sees it</summary>
          <pre aria-label="Composed prompt">{settings.composed_system_prompt}</pre>
        </details>
      </form>
    </section>
  );
}
