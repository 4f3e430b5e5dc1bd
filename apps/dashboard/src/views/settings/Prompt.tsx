import { useEffect, useState } from 'react';
import { useCan, useDashboard } from '../../context';
import { dataOf } from '../../lib/api';
import {
  guidedFields,
  promptBody,
  toPromptDraft,
  type PromptDraft,
  type PromptSettings,
} from './prompt-draft';

/**
 * The assistant's prompt, guided (five parts combined) or advanced (the whole system prompt), and the
 * prompt as the model sees it, re-read whenever `contextVersion` says the checklist or the company
 * context changed.
 */
export function Prompt({ contextVersion }: { contextVersion: number }) {
  const canManage = useCan('manage_settings');
  const { settings, draft, error, saved, busy, edit, save } = usePromptSettings(contextVersion);

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
        <ModeChoice mode={draft.mode} disabled={!canManage} onChange={(mode) => edit({ mode })} />
        <PromptText draft={draft} readOnly={!canManage} onEdit={edit} />
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

/**
 * The account's prompt settings (what the API composed from them included) and the draft being
 * edited: loaded once, saved on demand, the settings re-read when the context changes.
 */
function usePromptSettings(contextVersion: number) {
  const { api, session } = useDashboard();
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

  // The form that calls these is only shown once the draft is loaded.
  const edit = (change: Partial<PromptDraft>) => {
    if (!draft) return;
    setSaved(false);
    setDraft({ ...draft, ...change });
  };
  const save = async () => {
    if (!draft) return;
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
  return { settings, draft, error, saved, busy, edit, save };
}

function ModeChoice({
  mode: current,
  disabled,
  onChange,
}: {
  mode: PromptDraft['mode'];
  disabled: boolean;
  onChange: (mode: PromptDraft['mode']) => void;
}) {
  return (
    <div className="segmented" role="radiogroup" aria-label="Prompt mode">
      {(['guided', 'advanced'] as const).map((mode) => (
        <label key={mode} className={current === mode ? 'segment active' : 'segment'}>
          <input
            type="radio"
            name="mode"
            value={mode}
            checked={current === mode}
            disabled={disabled}
            onChange={() => onChange(mode)}
          />
          {mode === 'guided' ? 'Guided' : 'Advanced'}
        </label>
      ))}
    </div>
  );
}

/** The draft's text in its mode: the five guided parts, or the whole system prompt. */
function PromptText({
  draft,
  readOnly,
  onEdit,
}: {
  draft: PromptDraft;
  readOnly: boolean;
  onEdit: (change: Partial<PromptDraft>) => void;
}) {
  if (draft.mode === 'guided') {
    return guidedFields.map(([field, label, placeholder]) => (
      <label key={field} className="field">
        {label}
        <textarea
          aria-label={label}
          rows={2}
          maxLength={4000}
          placeholder={placeholder}
          readOnly={readOnly}
          value={draft[field]}
          onChange={(event) => onEdit({ [field]: event.target.value })}
        />
      </label>
    ));
  }
  return (
    <label className="field">
      System prompt
      <textarea
        aria-label="System prompt"
        rows={10}
        maxLength={20000}
        placeholder="The whole system prompt; {{company}} is replaced by your company name"
        readOnly={readOnly}
        value={draft.system_prompt}
        onChange={(event) => onEdit({ system_prompt: event.target.value })}
      />
    </label>
  );
}
