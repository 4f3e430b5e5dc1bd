import { useCallback, useEffect, useState } from 'react';
import { useCan, useDashboard } from '../../context';
import { dataOf, type Schemas } from '../../lib/api';
import { useLiveChanges } from '../../lib/live-context';

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
export function Requirements({ onChanged }: { onChanged: () => void }) {
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
