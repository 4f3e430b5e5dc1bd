import { useState } from 'react';
import { useDashboard } from '../../context';
import { dataOf, type Schemas } from '../../lib/api';

type Sequence = Schemas['Sequence'];

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
  steps.map((step) => {
    const timing = { delay_hours: Number(step.delay_hours || '0'), skip_if_replied: step.skip_if_replied };
    return step.type === 'fixed'
      ? { type: 'fixed', message: step.message.trim(), ...timing }
      : { type: 'ai', instructions: step.instructions.trim(), ...timing };
  });

/** Creates a sequence, or edits `sequence`: its name, description and steps. */
export function Builder({
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
