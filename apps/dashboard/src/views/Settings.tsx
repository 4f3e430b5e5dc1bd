import { useCallback, useEffect, useState } from 'react';
import { useCan, useDashboard } from '../context';
import { dataOf, fileUpload, type Schemas } from '../lib/api';
import { formatTime } from '../lib/format';
import { useLiveChanges } from '../lib/live-context';

type Requirement = Schemas['Requirement'];
type RequirementType = Requirement['type'];

const requirementTypes: readonly RequirementType[] = ['document', 'text', 'email', 'phone', 'number', 'date'];

interface RequirementDraft {
  name: string;
  type: RequirementType;
  description: string;
  required: boolean;
}
const blankRequirement: RequirementDraft = { name: '', type: 'document', description: '', required: true };

/** The checklist the AI collects from every lead; `onChanged` after every change made here. */
function Requirements({ onChanged }: { onChanged: () => void }) {
  const { api, session } = useDashboard();
  const canManage = useCan('manage_requirements');
  const [requirements, setRequirements] = useState<Requirement[]>([]);
  const [draft, setDraft] = useState(blankRequirement);
  const [error, setError] = useState<string | null>(null);
  const id = session.account.id;

  const load = useCallback(async () => {
    const list = dataOf(await api.GET('/accounts/{id}/requirements', { params: { path: { id } } }));
    setRequirements(list.requirements);
  }, [api, id]);
  useEffect(() => {
    void load().catch((failure: Error) => setError(failure.message));
  }, [load]);
  useLiveChanges((changes) => {
    if (changes.resync) void load().catch(() => undefined);
  });

  const act = async (action: () => Promise<unknown>) => {
    setError(null);
    try {
      await action();
      await load();
      onChanged();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };

  return (
    <section className="panel" aria-label="Checklist requirements">
      <h2>Checklist</h2>
      <p className="sub">What the assistant collects from each lead, one item at a time.</p>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <table className="requirements">
        <thead>
          <tr>
            <th>Item</th>
            <th>Type</th>
            <th>Required</th>
            {canManage && <th />}
          </tr>
        </thead>
        <tbody>
          {requirements.map((requirement) => (
            <tr key={requirement.id}>
              <td>
                {requirement.name}
                {requirement.description && <div className="sub">{requirement.description}</div>}
              </td>
              <td>{requirement.type}</td>
              <td>
                <input
                  type="checkbox"
                  aria-label={`${requirement.name} required`}
                  checked={requirement.required}
                  disabled={!canManage}
                  onChange={(event) =>
                    void act(() =>
                      api.PATCH('/accounts/{id}/requirements/{requirement_id}', {
                        params: { path: { id, requirement_id: requirement.id } },
                        body: { required: event.target.checked },
                      }),
                    )
                  }
                />
              </td>
              {canManage && (
                <td>
                  <button
                    className="link"
                    onClick={() =>
                      void act(() =>
                        api.DELETE('/accounts/{id}/requirements/{requirement_id}', {
                          params: { path: { id, requirement_id: requirement.id } },
                        }),
                      )
                    }
                  >
                    Remove
                  </button>
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
      {requirements.length === 0 && <p className="empty">No checklist items yet.</p>}
      {canManage && (
        <form
          className="add-requirement"
          onSubmit={(event) => {
            event.preventDefault();
            if (!draft.name.trim()) return;
            void act(async () => {
              await api.POST('/accounts/{id}/requirements', {
                params: { path: { id } },
                body: {
                  name: draft.name.trim(),
                  type: draft.type,
                  required: draft.required,
                  ...(draft.description.trim() && { description: draft.description.trim() }),
                },
              });
              setDraft(blankRequirement);
            });
          }}
        >
          <input
            aria-label="Item name"
            placeholder="New item, e.g. W-2"
            value={draft.name}
            onChange={(event) => setDraft({ ...draft, name: event.target.value })}
          />
          <select
            aria-label="Item type"
            value={draft.type}
            onChange={(event) => setDraft({ ...draft, type: event.target.value as RequirementType })}
          >
            {requirementTypes.map((type) => (
              <option key={type}>{type}</option>
            ))}
          </select>
          <input
            aria-label="Item description"
            placeholder="Description (optional)"
            value={draft.description}
            onChange={(event) => setDraft({ ...draft, description: event.target.value })}
          />
          <label className="check">
            <input
              type="checkbox"
              checked={draft.required}
              onChange={(event) => setDraft({ ...draft, required: event.target.checked })}
            />
            Required
          </label>
          <button type="submit">Add</button>
        </form>
      )}
    </section>
  );
}

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
function Prompt({ contextVersion }: { contextVersion: number }) {
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

type ContextFile = Schemas['ContextFile'];
type ContextUrl = Schemas['ContextUrl'];

export const fileSize = (bytes: number) =>
  bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(bytes < 10 * 1024 ? 1 : 0)} KB`;

/**
 * What the assistant knows of the company: uploaded text files and pages it keeps in sync;
 * `onChanged` after every change made here.
 */
function Context({ onChanged }: { onChanged: () => void }) {
  const { api, session } = useDashboard();
  const canManage = useCan('manage_settings');
  const [files, setFiles] = useState<ContextFile[]>([]);
  const [urls, setUrls] = useState<ContextUrl[]>([]);
  const [url, setUrl] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState<'file' | 'url' | null>(null);
  const id = session.account.id;

  const load = useCallback(async () => {
    const [fileList, urlList] = await Promise.all([
      api.GET('/accounts/{id}/context/files', { params: { path: { id } } }).then(dataOf),
      api.GET('/accounts/{id}/context/urls', { params: { path: { id } } }).then(dataOf),
    ]);
    setFiles(fileList.files);
    setUrls(urlList.urls);
  }, [api, id]);
  useEffect(() => {
    void load().catch((failure: Error) => setError(failure.message));
  }, [load]);

  const act = async (kind: 'file' | 'url' | null, action: () => Promise<unknown>) => {
    setError(null);
    setBusy(kind);
    try {
      await action();
      await load();
      onChanged();
    } catch (failure) {
      setError((failure as Error).message);
    } finally {
      setBusy(null);
    }
  };

  return (
    <section className="panel" aria-label="Company context">
      <h2>Company context</h2>
      <p className="sub">
        Text files and web pages the assistant uses to answer questions about your company.
      </p>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <h3>Files</h3>
      <ul className="context-list" aria-label="Context files">
        {files.map((file) => (
          <li key={file.id}>
            <span className="name">{file.name}</span>
            <span className="sub">{fileSize(file.file_size)}</span>
            {canManage && (
              <button
                className="link"
                aria-label={`Remove ${file.name}`}
                onClick={() =>
                  void act(null, () =>
                    api.DELETE('/accounts/{id}/context/files/{file_id}', {
                      params: { path: { id, file_id: file.id } },
                    }),
                  )
                }
              >
                Remove
              </button>
            )}
          </li>
        ))}
      </ul>
      {files.length === 0 && <p className="empty">No files yet.</p>}
      {canManage && (
        <label className="button secondary">
          {busy === 'file' ? 'Uploading…' : 'Upload .txt or .md'}
          <input
            type="file"
            accept=".txt,.md,text/plain,text/markdown"
            aria-label="Upload context file"
            hidden
            onChange={(event) => {
              const file = event.target.files?.[0];
              event.target.value = '';
              if (file) {
                void act('file', () =>
                  api.POST('/accounts/{id}/context/files', {
                    params: { path: { id } },
                    body: fileUpload(file),
                  }),
                );
              }
            }}
          />
        </label>
      )}
      <h3>Web pages</h3>
      <ul className="context-list" aria-label="Context pages">
        {urls.map((page) => (
          <li key={page.id}>
            <span className="name">
              {page.title ?? page.url}
              <span className="sub url">{page.url}</span>
            </span>
            <span className="sub">
              {page.status === 'failing' ? (
                <span className="badge handoff" title={page.last_error ?? undefined}>
                  Unreachable
                </span>
              ) : (
                page.last_scraped_at && `Synced ${formatTime(page.last_scraped_at)}`
              )}
            </span>
            {canManage && (
              <button
                className="link"
                aria-label={`Remove ${page.url}`}
                onClick={() =>
                  void act(null, () =>
                    api.DELETE('/accounts/{id}/context/urls/{url_id}', {
                      params: { path: { id, url_id: page.id } },
                    }),
                  )
                }
              >
                Remove
              </button>
            )}
          </li>
        ))}
      </ul>
      {urls.length === 0 && <p className="empty">No pages yet.</p>}
      {canManage && (
        <form
          className="add-requirement"
          onSubmit={(event) => {
            event.preventDefault();
            if (!url.trim()) return;
            void act('url', async () => {
              await api.POST('/accounts/{id}/context/urls', {
                params: { path: { id } },
                body: { url: url.trim() },
              });
              setUrl('');
            });
          }}
        >
          <input
            type="url"
            aria-label="Page address"
            placeholder="https://www.example.com/faq"
            maxLength={2048}
            value={url}
            onChange={(event) => setUrl(event.target.value)}
          />
          <button type="submit" disabled={busy === 'url' || !url.trim()}>
            {busy === 'url' ? 'Reading…' : 'Add page'}
          </button>
        </form>
      )}
    </section>
  );
}

export function Settings() {
  // The composed prompt includes the checklist and the company context edited beside it.
  const [contextVersion, setContextVersion] = useState(0);
  const contextChanged = useCallback(() => setContextVersion((version) => version + 1), []);
  return (
    <div className="settings">
      <Prompt contextVersion={contextVersion} />
      <Context onChanged={contextChanged} />
      <Requirements onChanged={contextChanged} />
    </div>
  );
}
