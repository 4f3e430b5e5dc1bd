import { useEffect, useState } from 'react';
import { useCan, useDashboard } from '../../context';
import { dataOf, type Schemas } from '../../lib/api';
import { enrollmentLabel } from '../../lib/enrollment';
import { formatDateTime } from '../../lib/format';

type LeadEnrollment = Schemas['LeadEnrollment'];

const enrollmentStatus: Record<LeadEnrollment['status'], string> = {
  active: 'Active',
  paused: 'Paused',
  completed: 'Completed',
  cancelled: 'Cancelled',
  opted_out: 'Stopped (opted out)',
};

/** Every sequence the lead is or was in, with its state; enrolling it in another, taking it out. */
export function LeadSequences({
  lead,
  onEnrolled,
}: {
  lead: Schemas['LeadDetails'];
  onEnrolled: () => void;
}) {
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
