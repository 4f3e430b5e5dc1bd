import { useCallback, useEffect, useState } from 'react';
import { useCan, useDashboard } from '../context';
import { dataOf, type Schemas } from '../lib/api';
import { useLiveChanges } from '../lib/live-context';
import { Builder } from './sequences/Builder';
import { SequenceDetail } from './sequences/SequenceDetail';

type Sequence = Schemas['Sequence'];

/** The account's sequences: the builder for fixed and AI steps, activation, the default, enrollment. */
export function Sequences() {
  const { api, session } = useDashboard();
  const canManage = useCan('manage_sequences');
  const [sequences, setSequences] = useState<Sequence[]>([]);
  const [loaded, setLoaded] = useState(false);
  const [selected, setSelected] = useState<string | null>(null);
  const [editing, setEditing] = useState<'new' | 'selected' | null>(null);
  const [error, setError] = useState<string | null>(null);

  const load = useCallback(async () => {
    const page = dataOf(
      await api.GET('/accounts/{id}/sequences', {
        params: { path: { id: session.account.id }, query: { limit: 100 } },
      }),
    );
    setSequences(page.sequences);
    setLoaded(true);
    setSelected((current) => current ?? page.sequences[0]?.id ?? null);
  }, [api, session.account.id]);
  useEffect(() => {
    void load().catch((failure: Error) => setError(failure.message));
  }, [load]);
  // Enrollments and completions move the counters.
  useLiveChanges((changes) => {
    if (changes.resync || changes.leads.length > 0) void load().catch(() => undefined);
  });

  const current = sequences.find((sequence) => sequence.id === selected);
  const saved = (sequence: Sequence) => {
    setEditing(null);
    setSelected(sequence.id);
    void load().catch((failure: Error) => setError(failure.message));
  };

  return (
    <div className="split">
      <aside className="list-pane">
        <div className="toolbar">
          <strong>Sequences</strong>
          <span className="count">{sequences.length}</span>
          <span className="spacer" />
          {canManage && (
            <button onClick={() => setEditing('new')} disabled={editing === 'new'}>
              New sequence
            </button>
          )}
        </div>
        {error && <p className="error">{error}</p>}
        {loaded && sequences.length === 0 && <p className="empty">No sequences yet.</p>}
        <ul className="conversation-list" aria-label="Sequences">
          {sequences.map((sequence) => (
            <li key={sequence.id}>
              <button
                className={
                  sequence.id === selected && editing !== 'new' ? 'conversation selected' : 'conversation'
                }
                onClick={() => {
                  setSelected(sequence.id);
                  setEditing(null);
                }}
              >
                <span className="who">
                  {sequence.name}
                  {sequence.is_default && <span className="badge muted">Default</span>}
                </span>
                <span className="when">
                  <span className={`badge ${sequence.is_active ? 'active' : 'muted'}`}>
                    {sequence.is_active ? 'Active' : 'Paused'}
                  </span>
                </span>
                <span className="preview">
                  {sequence.steps.length} {sequence.steps.length === 1 ? 'step' : 'steps'} ·{' '}
                  {sequence.enrolled_count} enrolled
                </span>
              </button>
            </li>
          ))}
        </ul>
      </aside>
      <section className="table-pane">
        {editing === 'new' ? (
          <Builder onSaved={saved} onCancel={() => setEditing(null)} />
        ) : current && editing === 'selected' ? (
          <Builder key={current.id} sequence={current} onSaved={saved} onCancel={() => setEditing(null)} />
        ) : current ? (
          <SequenceDetail
            sequence={current}
            onEdit={() => setEditing('selected')}
            onChanged={(next) => {
              if (!next) setSelected(null);
              void load().catch((failure: Error) => setError(failure.message));
            }}
          />
        ) : (
          loaded && (
            <p className="empty">
              {sequences.length > 0
                ? 'Select a sequence.'
                : canManage
                  ? 'Create a sequence to follow up with leads automatically.'
                  : 'There are no sequences yet.'}
            </p>
          )
        )}
      </section>
    </div>
  );
}
