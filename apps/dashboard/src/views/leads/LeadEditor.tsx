import { useState } from 'react';
import { useDashboard } from '../../context';
import { dataOf, type Schemas } from '../../lib/api';

type LeadDetail = Schemas['LeadDetails'];

const editableFields = [
  ['name', 'Name', 'text'],
  ['email', 'Email', 'email'],
  ['company', 'Company', 'text'],
  ['source', 'Source', 'text'],
  ['notes', 'Notes', 'textarea'],
] as const;
type EditableField = (typeof editableFields)[number][0];

/** Only the fields that changed; an emptied field is cleared. */
export function leadChanges(
  lead: Record<EditableField, string | null>,
  draft: Record<EditableField, string>,
) {
  const changes: Partial<Record<EditableField, string | null>> = {};
  for (const [field] of editableFields) {
    const value = draft[field].trim() || null;
    if (value !== (lead[field] ?? null)) changes[field] = value;
  }
  return changes;
}

/** The lead's own fields as a form; `onSaved` with the lead as the server answers it. */
export function LeadEditor({
  lead,
  onSaved,
  onCancel,
}: {
  lead: LeadDetail;
  onSaved: (lead: LeadDetail) => void;
  onCancel: () => void;
}) {
  const { api, session } = useDashboard();
  const [draft, setDraft] = useState(
    () =>
      Object.fromEntries(editableFields.map(([field]) => [field, lead[field] ?? ''])) as Record<
        EditableField,
        string
      >,
  );
  const [error, setError] = useState<string | null>(null);
  const save = async () => {
    setError(null);
    const changes = leadChanges(lead, draft);
    if (Object.keys(changes).length === 0) return onCancel();
    try {
      onSaved(
        dataOf(
          await api.PATCH('/accounts/{id}/leads/{phone}', {
            params: { path: { id: session.account.id, phone: lead.phone } },
            body: changes,
          }),
        ),
      );
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  return (
    <form
      className="lead-editor"
      aria-label="Edit lead"
      onSubmit={(event) => {
        event.preventDefault();
        void save();
      }}
    >
      {editableFields.map(([field, label, kind]) => (
        <label key={field} className="field">
          {label}
          {kind === 'textarea' ? (
            <textarea
              aria-label={label}
              rows={3}
              maxLength={5000}
              value={draft[field]}
              onChange={(event) => setDraft({ ...draft, [field]: event.target.value })}
            />
          ) : (
            <input
              aria-label={label}
              type={kind}
              maxLength={field === 'email' ? 320 : 200}
              value={draft[field]}
              onChange={(event) => setDraft({ ...draft, [field]: event.target.value })}
            />
          )}
        </label>
      ))}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <div className="actions">
        <button type="button" className="secondary" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit">Save</button>
      </div>
    </form>
  );
}
