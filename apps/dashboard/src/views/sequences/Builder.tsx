import { useState } from 'react';
import { useDashboard } from '../../context';
import { dataOf, type Schemas } from '../../lib/api';
import { StepEditor, type DraftStep } from './StepEditor';

type Sequence = Schemas['Sequence'];

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
          <StepEditor
            key={index}
            step={step}
            index={index}
            count={draft.steps.length}
            onChange={(change) => setStep(index, change)}
            onMove={(by) => move(index, by)}
            onRemove={() => setDraft({ ...draft, steps: draft.steps.filter((_, at) => at !== index) })}
          />
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
