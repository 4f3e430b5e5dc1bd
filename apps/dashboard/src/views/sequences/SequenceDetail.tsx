import { useState } from 'react';
import { DeleteButton } from '../../components/DeleteButton';
import { useCan, useDashboard } from '../../context';
import { dataOf, type Schemas } from '../../lib/api';
import { enrollmentLabel } from '../../lib/enrollment';
import { StepList } from './StepList';

type Sequence = Schemas['Sequence'];

/** Enrolls a lead in the sequence by phone, as people type numbers. */
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

/** One sequence: its state and counters, its steps, the actions on it and enrolling a lead. */
export function SequenceDetail({
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
