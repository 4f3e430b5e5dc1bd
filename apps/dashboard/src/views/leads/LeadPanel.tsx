import { useCallback, useEffect, useState } from 'react';
import { DeleteButton } from '../../components/DeleteButton';
import { useCan, useDashboard } from '../../context';
import { dataOf, type Schemas } from '../../lib/api';
import { formatPhone } from '../../lib/format';
import { useLiveChanges } from '../../lib/live-context';
import { LeadChecklist } from './LeadChecklist';
import { LeadEditor } from './LeadEditor';
import { LeadSequences } from './LeadSequences';
import { leadStatuses, type LeadStatus } from './statuses';

/** The fields of a lead worth showing, those it has. */
function LeadFields({
  lead,
  onStatusChange,
}: {
  lead: Schemas['LeadDetails'];
  onStatusChange: (status: LeadStatus) => void;
}) {
  return (
    <dl className="fields">
      <dt>Status</dt>
      <dd>
        <select
          aria-label="Status"
          value={lead.status}
          onChange={(event) => onStatusChange(event.target.value as LeadStatus)}
        >
          {leadStatuses.map((status) => (
            <option key={status} value={status}>
              {status}
            </option>
          ))}
        </select>
      </dd>
      {lead.email && (
        <>
          <dt>Email</dt>
          <dd>{lead.email}</dd>
        </>
      )}
      {lead.company && (
        <>
          <dt>Company</dt>
          <dd>{lead.company}</dd>
        </>
      )}
      {lead.source && (
        <>
          <dt>Source</dt>
          <dd>{lead.source}</dd>
        </>
      )}
      {lead.notes && (
        <>
          <dt>Notes</dt>
          <dd className="notes">{lead.notes}</dd>
        </>
      )}
      <dt>Messages</dt>
      <dd>
        {lead.conversation.message_count}
        {lead.conversation.needs_handoff && <span className="badge handoff">Needs attention</span>}
        {lead.opted_out && <span className="badge muted">Opted out</span>}
      </dd>
    </dl>
  );
}

/** One lead beside the list: its fields, status, sequences and checklist, kept live; editing, deleting. */
export function LeadPanel({
  phone,
  onChanged,
  onClose,
  onDeleted,
}: {
  phone: string;
  onChanged: () => void;
  onClose: () => void;
  onDeleted: () => void;
}) {
  const { api, session, parent } = useDashboard();
  const canManage = useCan('manage_leads');
  const [editing, setEditing] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const [lead, setLead] = useState<Schemas['LeadDetails'] | null>(null);
  const [checklist, setChecklist] = useState<Schemas['Checklist'] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const id = session.account.id;

  const load = useCallback(async () => {
    const path = { id, phone };
    const [detail, items] = await Promise.all([
      api.GET('/accounts/{id}/leads/{phone}', { params: { path } }).then(dataOf),
      api.GET('/accounts/{id}/leads/{phone}/checklist', { params: { path } }).then(dataOf),
    ]);
    setLead(detail);
    setChecklist(items);
  }, [api, id, phone]);

  useEffect(() => {
    void load().catch((failure: Error) => setError(failure.message));
  }, [load]);
  useLiveChanges((changes) => {
    if (changes.resync || changes.leads.includes(phone)) void load().catch(() => undefined);
  });

  const changeStatus = async (status: LeadStatus) => {
    setError(null);
    try {
      const updated = dataOf(
        await api.PATCH('/accounts/{id}/leads/{phone}', {
          params: { path: { id, phone } },
          body: { status },
        }),
      );
      setLead(updated);
      parent.post({ type: 'service:lead_status_changed', data: { phone, status } });
      onChanged();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };

  const remove = async () => {
    setError(null);
    try {
      await api.DELETE('/accounts/{id}/leads/{phone}', { params: { path: { id, phone } } });
      onDeleted();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };

  return (
    <aside className="detail-pane" aria-label="Lead details">
      <header className="thread-header">
        <div>
          <strong>{lead?.name ?? formatPhone(phone)}</strong>
          {lead?.name && <span className="sub">{formatPhone(phone)}</span>}
        </div>
        <button className="link" onClick={onClose} aria-label="Close">
          ×
        </button>
      </header>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {lead && canManage && !editing && (
        <div className="lead-actions">
          <button className="secondary" onClick={() => setEditing(true)}>
            Edit
          </button>
          <DeleteButton
            label="Delete lead"
            confirming={confirming}
            onConfirmingChange={setConfirming}
            onDelete={() => void remove()}
          />
        </div>
      )}
      {confirming && (
        <p className="sub pad">
          Deleting removes the lead, its checklist and its sequence; the conversation stays.
        </p>
      )}
      {lead && editing && (
        <LeadEditor
          lead={lead}
          onCancel={() => setEditing(false)}
          onSaved={(updated) => {
            setLead(updated);
            setEditing(false);
            onChanged();
          }}
        />
      )}
      {lead && !editing && <LeadFields lead={lead} onStatusChange={(status) => void changeStatus(status)} />}
      {lead && !editing && (
        <LeadSequences lead={lead} onEnrolled={() => void load().catch(() => undefined)} />
      )}
      {checklist && <LeadChecklist checklist={checklist} />}
    </aside>
  );
}
