import { useCallback, useEffect, useState } from 'react';
import { useCan, useDashboard } from '../context';
import { dataOf, type Schemas } from '../lib/api';
import { leadsFromCsv } from '../lib/csv';
import { formatDateTime, formatPhone, formatTime, percent } from '../lib/format';
import { useLiveChanges } from '../lib/live-context';
import { enrollmentLabel } from './Sequences';
import { DeleteButton } from './DeleteButton';

type LeadStatus = Schemas['Lead']['status'];
type LeadDetail = Schemas['LeadDetails'];
type LeadEnrollment = Schemas['LeadEnrollment'];

export const leadStatuses: readonly LeadStatus[] = ['new', 'contacted', 'qualified', 'converted', 'lost'];
const PAGE_SIZE = 25;

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

const enrollmentStatus: Record<LeadEnrollment['status'], string> = {
  active: 'Active',
  paused: 'Paused',
  completed: 'Completed',
  cancelled: 'Cancelled',
  opted_out: 'Stopped (opted out)',
};

function LeadEditor({
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

/** Every sequence the lead is or was in, with its state; enrolling it in another, taking it out. */
function LeadSequences({ lead, onEnrolled }: { lead: LeadDetail; onEnrolled: () => void }) {
  const { api, session } = useDashboard();
  const canEnroll = useCan('manage_sequences');
  const [sequences, setSequences] = useState<Schemas['Sequence'][]>([]);
  const [enrollments, setEnrollments] = useState<LeadEnrollment[] | null>(null);
  const [choice, setChoice] = useState('');
  const [outcome, setOutcome] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const id = session.account.id;

  useEffect(() => {
    if (!canEnroll) return;
    api
      .GET('/accounts/{id}/sequences', { params: { path: { id }, query: { limit: 100 } } })
      .then(dataOf)
      .then((page) => setSequences(page.sequences.filter((sequence) => sequence.is_active)))
      .catch(() => undefined);
  }, [api, canEnroll, id]);
  // Read again whenever the lead is (after an enrollment change, or live).
  useEffect(() => {
    api
      .GET('/accounts/{id}/leads/{phone}/sequences', { params: { path: { id, phone: lead.phone } } })
      .then(dataOf)
      .then((page) => setEnrollments(page.enrollments))
      .catch((failure: Error) => setError(failure.message));
  }, [api, lead, id]);

  const act = async (action: () => Promise<string>) => {
    setError(null);
    setOutcome(null);
    try {
      setOutcome(await action());
      onEnrolled();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  const enroll = () =>
    act(async () => {
      const result = dataOf(
        await api.POST('/accounts/{id}/sequences/{sequence_id}/enroll', {
          params: { path: { id, sequence_id: choice } },
          body: { phone: lead.phone },
        }),
      );
      setChoice('');
      return enrollmentLabel(result);
    });
  const unenroll = (sequenceId: string) =>
    act(async () => {
      const { action } = dataOf(
        await api.POST('/accounts/{id}/sequences/{sequence_id}/unenroll', {
          params: { path: { id, sequence_id: sequenceId } },
          body: { phone: lead.phone },
        }),
      );
      return action === 'unenrolled' ? 'Removed from the sequence.' : 'Not in the sequence any more.';
    });

  const running = new Set(
    (enrollments ?? [])
      .filter((enrollment) => enrollment.status === 'active' || enrollment.status === 'paused')
      .map((enrollment) => enrollment.sequence_id),
  );
  const available = sequences.filter((sequence) => !running.has(sequence.id));
  return (
    <section aria-label="Sequences">
      <h3>Sequences</h3>
      {enrollments?.length === 0 && <p className="empty">Not in a sequence.</p>}
      {enrollments && enrollments.length > 0 && (
        <ul className="enrollments">
          {enrollments.map((enrollment) => (
            <li key={enrollment.sequence_id} className="enrollment" data-status={enrollment.status}>
              <strong>{enrollment.name}</strong>
              <span className={`badge ${enrollment.status === 'active' ? 'active' : 'muted'}`}>
                {enrollmentStatus[enrollment.status]}
              </span>
              <br />
              <span className="sub">
                {Math.min(enrollment.current_step, enrollment.total_steps)} of {enrollment.total_steps} steps
                done
                {enrollment.next_step_at && ` · next ${formatDateTime(enrollment.next_step_at)}`}
              </span>
              {canEnroll && running.has(enrollment.sequence_id) && (
                <>
                  <br />
                  <button className="link danger-link" onClick={() => void unenroll(enrollment.sequence_id)}>
                    Remove from sequence
                  </button>
                </>
              )}
            </li>
          ))}
        </ul>
      )}
      {canEnroll && !lead.opted_out && available.length > 0 && (
        <div className="row">
          <select
            aria-label="Sequence to enroll in"
            value={choice}
            onChange={(event) => setChoice(event.target.value)}
          >
            <option value="">Choose a sequence…</option>
            {available.map((sequence) => (
              <option key={sequence.id} value={sequence.id}>
                {sequence.name}
              </option>
            ))}
          </select>
          <button disabled={!choice} onClick={() => void enroll()}>
            Enroll
          </button>
        </div>
      )}
      {outcome && (
        <p className="notice-ok" role="status">
          {outcome}
        </p>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}

export type ImportReport = Omit<Schemas['BulkImportResult'], 'success'>;

/** The bulk import's outcome, with each refused row by its line in the file (the header is line 1). */
export function ImportResult({ report }: { report: ImportReport }) {
  return (
    <div className="import-result" role="status">
      <p>
        {report.imported} imported, {report.updated} updated, {report.skipped} unchanged
        {report.errors.length > 0 && `, ${report.errors.length} refused`}.
      </p>
      {report.errors.length > 0 && (
        <table className="errors" aria-label="Rows not imported">
          <thead>
            <tr>
              <th>Line</th>
              <th>Phone</th>
              <th>Problem</th>
            </tr>
          </thead>
          <tbody>
            {report.errors.map((error) => (
              <tr key={error.index}>
                <td>{error.index + 2}</td>
                <td>{error.phone ?? ''}</td>
                <td>{error.message}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

function Importer({ onReport }: { onReport: (report: ImportReport | null) => void }) {
  const { api, session } = useDashboard();
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const importFile = async (file: File) => {
    onReport(null);
    setError(null);
    const parsed = leadsFromCsv(await file.text());
    if (parsed.error) return setError(parsed.error);
    if (parsed.leads.length === 0) return setError('The file has no rows to import.');
    setBusy(true);
    try {
      const report = await api.POST('/accounts/{id}/leads/bulk', {
        params: { path: { id: session.account.id } },
        // Rows go as the file has them, one without a phone too: the import refuses each bad row on
        // its own, by its index, which the result shows as the row's line.
        body: { leads: parsed.leads as Schemas['LeadImport'][] },
      });
      onReport(dataOf(report));
    } catch (failure) {
      setError((failure as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="importer">
      <label className="button secondary">
        {busy ? 'Importing…' : 'Import CSV'}
        <input
          type="file"
          accept=".csv,text/csv"
          aria-label="Import CSV"
          hidden
          onChange={(event) => {
            const file = event.target.files?.[0];
            event.target.value = '';
            if (file) void importFile(file);
          }}
        />
      </label>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

function LeadPanel({
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
  const [lead, setLead] = useState<LeadDetail | null>(null);
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
      {lead && !editing && (
        <dl className="fields">
          <dt>Status</dt>
          <dd>
            <select
              aria-label="Status"
              value={lead.status}
              onChange={(event) => void changeStatus(event.target.value as LeadStatus)}
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
      )}
      {lead && !editing && (
        <LeadSequences lead={lead} onEnrolled={() => void load().catch(() => undefined)} />
      )}
      {checklist && (
        <section aria-label="Checklist">
          <h3>
            Checklist <span className="sub">{percent(checklist.progress)}</span>
          </h3>
          <div className="progress" aria-hidden="true">
            <div style={{ width: percent(checklist.progress) }} />
          </div>
          {checklist.checklist.length === 0 ? (
            <p className="empty">No checklist items.</p>
          ) : (
            <ul className="checklist">
              {checklist.checklist.map((item) => (
                <li key={item.requirement_id} className={item.status} data-status={item.status}>
                  <span className="mark" aria-hidden="true">
                    {item.status === 'completed' ? '✓' : '○'}
                  </span>
                  <span>
                    {item.name}
                    {!item.required && <span className="sub"> optional</span>}
                    {item.value && <span className="sub"> · {item.value}</span>}
                  </span>
                </li>
              ))}
            </ul>
          )}
        </section>
      )}
    </aside>
  );
}

export function Leads() {
  const { api, session } = useDashboard();
  const canImport = useCan('manage_leads');
  const [filters, setFilters] = useState<{ status: LeadStatus | ''; source: string; search: string }>({
    status: '',
    source: '',
    search: '',
  });
  const [offset, setOffset] = useState(0);
  const [page, setPage] = useState<{ leads: Schemas['Lead'][]; total: number }>({ leads: [], total: 0 });
  const [selected, setSelected] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [report, setReport] = useState<ImportReport | null>(null);

  const load = useCallback(async () => {
    const result = await api.GET('/accounts/{id}/leads', {
      params: {
        path: { id: session.account.id },
        // An empty filter is no filter.
        query: {
          status: filters.status || undefined,
          source: filters.source || undefined,
          search: filters.search || undefined,
          limit: PAGE_SIZE,
          offset,
        },
      },
    });
    setPage(dataOf(result));
    setError(null);
  }, [api, filters, offset, session.account.id]);

  useEffect(() => {
    const timer = setTimeout(() => void load().catch((failure: Error) => setError(failure.message)), 150);
    return () => clearTimeout(timer);
  }, [load]);
  useLiveChanges((changes) => {
    if (changes.resync || changes.leads.length > 0) void load().catch(() => undefined);
  });

  const filter = (field: keyof typeof filters) => (value: string) => {
    setOffset(0);
    setFilters((current) => ({ ...current, [field]: value }));
  };
  const last = Math.min(offset + PAGE_SIZE, page.total);

  return (
    <div className="split">
      <section className="table-pane">
        <div className="toolbar">
          <input
            type="search"
            aria-label="Search"
            placeholder="Search name, email or phone"
            value={filters.search}
            onChange={(event) => filter('search')(event.target.value)}
          />
          <select
            aria-label="Status filter"
            value={filters.status}
            onChange={(event) => filter('status')(event.target.value)}
          >
            <option value="">All statuses</option>
            {leadStatuses.map((status) => (
              <option key={status} value={status}>
                {status}
              </option>
            ))}
          </select>
          <input
            aria-label="Source filter"
            placeholder="Source"
            value={filters.source}
            onChange={(event) => filter('source')(event.target.value)}
          />
          {canImport && (
            <Importer
              onReport={(next) => {
                setReport(next);
                if (next) void load();
              }}
            />
          )}
        </div>
        {report && <ImportResult report={report} />}
        {error && <p className="error">{error}</p>}
        <table className="leads" aria-label="Leads">
          <thead>
            <tr>
              <th>Name</th>
              <th>Phone</th>
              <th>Status</th>
              <th>Source</th>
              <th>Checklist</th>
              <th>Last message</th>
            </tr>
          </thead>
          <tbody>
            {page.leads.map((lead) => (
              <tr
                key={lead.phone}
                className={lead.phone === selected ? 'selected' : ''}
                onClick={() => setSelected(lead.phone)}
                data-phone={lead.phone}
              >
                <td>{lead.name ?? '—'}</td>
                <td>{formatPhone(lead.phone)}</td>
                <td>
                  <span className={`status ${lead.status}`}>{lead.status}</span>
                </td>
                <td>{lead.source ?? ''}</td>
                <td>{percent(lead.checklist_progress)}</td>
                <td>{formatTime(lead.last_message_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {page.leads.length === 0 && <p className="empty">No leads.</p>}
        <div className="pager">
          <span>{page.total === 0 ? '0' : `${offset + 1}–${last} of ${page.total}`}</span>
          <button
            className="secondary"
            disabled={offset === 0}
            onClick={() => setOffset(Math.max(0, offset - PAGE_SIZE))}
          >
            Previous
          </button>
          <button
            className="secondary"
            disabled={last >= page.total}
            onClick={() => setOffset(offset + PAGE_SIZE)}
          >
            Next
          </button>
        </div>
      </section>
      {selected && (
        <LeadPanel
          key={selected}
          phone={selected}
          onChanged={() => void load()}
          onClose={() => setSelected(null)}
          onDeleted={() => {
            setSelected(null);
            void load();
          }}
        />
      )}
    </div>
  );
}
