import { useCallback, useEffect, useState } from 'react';
import { useCan, useDashboard } from '../context';
import { DeleteButton } from '../components/DeleteButton';
import { dataOf, type Schemas } from '../lib/api';
import { enrollmentLabel } from '../lib/enrollment';
import { useLiveChanges } from '../lib/live-context';

type Sequence = Schemas['Sequence'];
type Step = Sequence['steps'][number];

/** A step as the builder edits it: both texts kept, so switching the type back loses nothing. */
interface DraftStep {
  type: 'fixed' | 'ai';
  message: string;
  instructions: string;
  delay_hours: string;
  skip_if_replied: boolean;
}

interface Draft {
  name: string;
  description: string;
  steps: DraftStep[];
}

const MAX_STEPS = 50;
const blankStep = (): DraftStep => ({
  type: 'fixed',
  message: '',
  instructions: '',
  delay_hours: '0',
  skip_if_replied: true,
});

export const delayLabel = (hours: number, first: boolean) => {
  const when = first ? 'after enrolling' : 'after the previous step';
  if (hours === 0) return first ? 'At once' : 'Right after the previous step';
  if (hours % 24 === 0) return `${hours / 24} ${hours === 24 ? 'day' : 'days'} ${when}`;
  return `${hours} ${hours === 1 ? 'hour' : 'hours'} ${when}`;
};

/** The steps, in order, as they will go out. */
export function StepList({ steps }: { steps: Step[] }) {
  return (
    <ol className="steps" aria-label="Steps">
      {steps.map((step) => (
        <li key={step.order} className="step" data-type={step.type}>
          <div className="step-head">
            <span className="step-number">{step.order + 1}</span>
            <span className={`badge ${step.type === 'ai' ? 'ai' : 'muted'}`}>
              {step.type === 'ai' ? 'AI' : 'Fixed'}
            </span>
            <span className="sub">
              {delayLabel(step.delay_hours, step.order === 0)}
              {step.skip_if_replied && ' · skipped if they replied'}
            </span>
          </div>
          <p className="step-text">
            {step.type === 'ai' ? (
              <>
                <span className="sub">AI writes: </span>
                {step.instructions}
              </>
            ) : (
              step.message
            )}
          </p>
        </li>
      ))}
    </ol>
  );
}

const toDraft = (sequence?: Sequence): Draft =>
  sequence
    ? {
        name: sequence.name,
        description: sequence.description ?? '',
        steps: sequence.steps.map((step) => ({
          type: step.type,
          message: step.message ?? '',
          instructions: step.instructions ?? '',
          delay_hours: String(step.delay_hours),
          skip_if_replied: step.skip_if_replied,
        })),
      }
    : { name: '', description: '', steps: [blankStep()] };

/** What the API takes: only the text the step's type uses. */
export const stepsBody = (steps: DraftStep[]): Schemas['SequenceStepInput'][] =>
  steps.map((step) => ({
    type: step.type,
    ...(step.type === 'fixed'
      ? { message: step.message.trim() }
      : { instructions: step.instructions.trim() }),
    delay_hours: Number(step.delay_hours || '0'),
    skip_if_replied: step.skip_if_replied,
  }));

function Builder({
  sequence,
  onSaved,
  onCancel,
}: {
  sequence?: Sequence;
  onSaved: (sequence: Sequence) => void;
  onCancel: () => void;
}) {
  const { api, session } = useDashboard();
  const [draft, setDraft] = useState<Draft>(() => toDraft(sequence));
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const setStep = (index: number, change: Partial<DraftStep>) =>
    setDraft((current) => ({
      ...current,
      steps: current.steps.map((step, at) => (at === index ? { ...step, ...change } : step)),
    }));
  const move = (index: number, by: number) =>
    setDraft((current) => {
      const steps = [...current.steps];
      const [step] = steps.splice(index, 1);
      steps.splice(index + by, 0, step!);
      return { ...current, steps };
    });

  const save = async () => {
    setBusy(true);
    setError(null);
    const name = draft.name.trim();
    const description = draft.description.trim();
    const steps = stepsBody(draft.steps);
    const id = session.account.id;
    try {
      onSaved(
        dataOf(
          sequence
            ? await api.PATCH('/accounts/{id}/sequences/{sequence_id}', {
                params: { path: { id, sequence_id: sequence.id } },
                body: { name, description: description || null, steps },
              })
            : await api.POST('/accounts/{id}/sequences', {
                params: { path: { id } },
                body: { name, description: description || undefined, steps },
              }),
        ),
      );
    } catch (failure) {
      setError((failure as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form
      className="builder"
      aria-label={sequence ? `Edit ${sequence.name}` : 'New sequence'}
      onSubmit={(event) => {
        event.preventDefault();
        void save();
      }}
    >
      <h2>{sequence ? 'Edit sequence' : 'New sequence'}</h2>
      {sequence && sequence.enrolled_count > 0 && (
        <p className="sub">Leads already enrolled keep the steps they started with.</p>
      )}
      <label className="field">
        Name
        <input
          aria-label="Sequence name"
          required
          maxLength={200}
          value={draft.name}
          onChange={(event) => setDraft({ ...draft, name: event.target.value })}
        />
      </label>
      <label className="field">
        Description
        <input
          aria-label="Sequence description"
          maxLength={2000}
          placeholder="Optional"
          value={draft.description}
          onChange={(event) => setDraft({ ...draft, description: event.target.value })}
        />
      </label>
      <ol className="steps editing">
        {draft.steps.map((step, index) => (
          <li key={index} className="step" aria-label={`Step ${index + 1}`}>
            <div className="step-head">
              <span className="step-number">{index + 1}</span>
              <select
                aria-label={`Step ${index + 1} type`}
                value={step.type}
                onChange={(event) => setStep(index, { type: event.target.value as DraftStep['type'] })}
              >
                <option value="fixed">Fixed message</option>
                <option value="ai">AI message</option>
              </select>
              <label className="check">
                Wait
                <input
                  type="number"
                  className="hours"
                  aria-label={`Step ${index + 1} delay in hours`}
                  min={0}
                  max={8760}
                  step={1}
                  value={step.delay_hours}
                  onChange={(event) => setStep(index, { delay_hours: event.target.value })}
                />
                hours
              </label>
              <label className="check">
                <input
                  type="checkbox"
                  aria-label={`Step ${index + 1} skip if replied`}
                  checked={step.skip_if_replied}
                  onChange={(event) => setStep(index, { skip_if_replied: event.target.checked })}
                />
                Skip if they replied
              </label>
              <span className="step-actions">
                <button
                  type="button"
                  className="link"
                  aria-label={`Move step ${index + 1} up`}
                  disabled={index === 0}
                  onClick={() => move(index, -1)}
                >
                  ↑
                </button>
                <button
                  type="button"
                  className="link"
                  aria-label={`Move step ${index + 1} down`}
                  disabled={index === draft.steps.length - 1}
                  onClick={() => move(index, 1)}
                >
                  ↓
                </button>
                <button
                  type="button"
                  className="link"
                  aria-label={`Remove step ${index + 1}`}
                  disabled={draft.steps.length === 1}
                  onClick={() => setDraft({ ...draft, steps: draft.steps.filter((_, at) => at !== index) })}
                >
                  Remove
                </button>
              </span>
            </div>
            {step.type === 'fixed' ? (
              <textarea
                aria-label={`Step ${index + 1} message`}
                maxLength={1600}
                placeholder="Hi {{first_name}}, this is {{company}}…"
                value={step.message}
                onChange={(event) => setStep(index, { message: event.target.value })}
              />
            ) : (
              <textarea
                aria-label={`Step ${index + 1} instructions`}
                maxLength={4000}
                placeholder="What the assistant should say, e.g. ask whether they found a home yet"
                value={step.instructions}
                onChange={(event) => setStep(index, { instructions: event.target.value })}
              />
            )}
          </li>
        ))}
      </ol>
      <p className="sub">
        Variables: {'{{first_name}}'}, {'{{last_name}}'}, {'{{name}}'}, {'{{company}}'}, {'{{email}}'},{' '}
        {'{{property_address}}'}
      </p>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <div className="actions">
        <button
          type="button"
          className="secondary"
          disabled={draft.steps.length >= MAX_STEPS}
          onClick={() => setDraft({ ...draft, steps: [...draft.steps, blankStep()] })}
        >
          Add step
        </button>
        <span className="spacer" />
        <button type="button" className="secondary" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" disabled={busy || !draft.name.trim()}>
          {sequence ? 'Save' : 'Create sequence'}
        </button>
      </div>
    </form>
  );
}

function Enroll({ sequence }: { sequence: Sequence }) {
  const { api, session } = useDashboard();
  const [phone, setPhone] = useState('');
  const [outcome, setOutcome] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  return (
    <form
      className="enroll"
      onSubmit={(event) => {
        event.preventDefault();
        setError(null);
        setOutcome(null);
        api
          .POST('/accounts/{id}/sequences/{sequence_id}/enroll', {
            params: { path: { id: session.account.id, sequence_id: sequence.id } },
            body: { phone: phone.trim() },
          })
          .then(dataOf)
          .then((enrollment) => {
            setOutcome(enrollmentLabel(enrollment));
            setPhone('');
          })
          .catch((failure: Error) => setError(failure.message));
      }}
    >
      <h3>Enroll a lead</h3>
      <div className="row">
        <input
          aria-label="Lead phone"
          placeholder="Phone, e.g. +15125550100"
          maxLength={32}
          value={phone}
          onChange={(event) => setPhone(event.target.value)}
        />
        <button type="submit" disabled={!phone.trim() || !sequence.is_active}>
          Enroll
        </button>
      </div>
      {!sequence.is_active && <p className="sub">Activate the sequence to enroll leads.</p>}
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
    </form>
  );
}

function Detail({
  sequence,
  onEdit,
  onChanged,
}: {
  sequence: Sequence;
  onEdit: () => void;
  onChanged: (next: Sequence | null) => void;
}) {
  const { api, session } = useDashboard();
  const canManage = useCan('manage_sequences');
  const [error, setError] = useState<string | null>(null);
  const [confirming, setConfirming] = useState(false);
  const path = { id: session.account.id, sequence_id: sequence.id };

  const update = async (changes: Schemas['UpdateSequence']) => {
    setError(null);
    try {
      onChanged(
        dataOf(
          await api.PATCH('/accounts/{id}/sequences/{sequence_id}', { params: { path }, body: changes }),
        ),
      );
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  const remove = async () => {
    setError(null);
    try {
      await api.DELETE('/accounts/{id}/sequences/{sequence_id}', { params: { path } });
      onChanged(null);
    } catch (failure) {
      setError((failure as Error).message);
    }
  };

  return (
    <section className="sequence-detail" aria-label={sequence.name}>
      <header className="sequence-header">
        <div>
          <h2>
            {sequence.name}
            <span className={`badge ${sequence.is_active ? 'active' : 'muted'}`}>
              {sequence.is_active ? 'Active' : 'Paused'}
            </span>
            {sequence.is_default && <span className="badge muted">Default</span>}
          </h2>
          {sequence.description && <p className="sub">{sequence.description}</p>}
          <p className="sub">
            {sequence.enrolled_count} enrolled · {sequence.completed_count} completed
          </p>
        </div>
        {canManage && (
          <div className="actions">
            <button className="secondary" onClick={() => void update({ is_active: !sequence.is_active })}>
              {sequence.is_active ? 'Pause' : 'Activate'}
            </button>
            {!sequence.is_default && (
              <button className="secondary" onClick={() => void update({ is_default: true })}>
                Make default
              </button>
            )}
            <button className="secondary" onClick={onEdit}>
              Edit
            </button>
            <DeleteButton
              label="Delete"
              confirming={confirming}
              onConfirmingChange={setConfirming}
              onDelete={() => void remove()}
            />
          </div>
        )}
      </header>
      {confirming && <p className="sub">Deleting stops the sequence for every lead enrolled in it.</p>}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <StepList steps={sequence.steps} />
      {canManage && <Enroll key={sequence.id} sequence={sequence} />}
    </section>
  );
}

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
          <Detail
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
