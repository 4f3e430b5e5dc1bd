import { useCallback, useEffect, useState } from 'react';
import { useCan, useDashboard } from '../context';
import { useLiveChanges } from '../lib/live-context';

const requirementTypes = ['document', 'text', 'email', 'phone', 'number', 'date'] as const;

interface Requirement {
  id: string;
  name: string;
  type: string;
  required: boolean;
  description: string | null;
}

/** The checklist the AI collects from every lead. */
function Requirements() {
  const { api, session } = useDashboard();
  const canManage = useCan('manage_requirements');
  const [requirements, setRequirements] = useState<Requirement[]>([]);
  const [draft, setDraft] = useState({ name: '', type: 'document', description: '', required: true });
  const [error, setError] = useState<string | null>(null);
  const base = `/accounts/${session.account.id}/requirements`;

  const load = useCallback(async () => {
    setRequirements((await api.get<{ requirements: Requirement[] }>(base)).requirements);
  }, [api, base]);
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
                    void act(() => api.patch(`${base}/${requirement.id}`, { required: event.target.checked }))
                  }
                />
              </td>
              {canManage && (
                <td>
                  <button
                    className="link"
                    onClick={() => void act(() => api.delete(`${base}/${requirement.id}`))}
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
              await api.post(base, {
                name: draft.name.trim(),
                type: draft.type,
                required: draft.required,
                ...(draft.description.trim() && { description: draft.description.trim() }),
              });
              setDraft({ name: '', type: 'document', description: '', required: true });
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
            onChange={(event) => setDraft({ ...draft, type: event.target.value })}
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

export function Settings() {
  return <Requirements />;
}
