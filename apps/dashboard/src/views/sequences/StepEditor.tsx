/** A step as the builder edits it: both texts kept, so switching the type back loses nothing. */
export interface DraftStep {
  type: 'fixed' | 'ai';
  message: string;
  instructions: string;
  delay_hours: string;
  skip_if_replied: boolean;
}

/** One step of the builder: its type, wait and reply rule, its text, and its place among `count` steps. */
export function StepEditor({
  step,
  index,
  count,
  onChange,
  onMove,
  onRemove,
}: {
  step: DraftStep;
  index: number;
  count: number;
  onChange: (change: Partial<DraftStep>) => void;
  onMove: (by: -1 | 1) => void;
  onRemove: () => void;
}) {
  return (
    <li className="step" aria-label={`Step ${index + 1}`}>
      <div className="step-head">
        <span className="step-number">{index + 1}</span>
        <select
          aria-label={`Step ${index + 1} type`}
          value={step.type}
          onChange={(event) => onChange({ type: event.target.value as DraftStep['type'] })}
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
            onChange={(event) => onChange({ delay_hours: event.target.value })}
          />
          hours
        </label>
        <label className="check">
          <input
            type="checkbox"
            aria-label={`Step ${index + 1} skip if replied`}
            checked={step.skip_if_replied}
            onChange={(event) => onChange({ skip_if_replied: event.target.checked })}
          />
          Skip if they replied
        </label>
        <span className="step-actions">
          <button
            type="button"
            className="link"
            aria-label={`Move step ${index + 1} up`}
            disabled={index === 0}
            onClick={() => onMove(-1)}
          >
            ↑
          </button>
          <button
            type="button"
            className="link"
            aria-label={`Move step ${index + 1} down`}
            disabled={index === count - 1}
            onClick={() => onMove(1)}
          >
            ↓
          </button>
          <button
            type="button"
            className="link"
            aria-label={`Remove step ${index + 1}`}
            disabled={count === 1}
            onClick={onRemove}
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
          onChange={(event) => onChange({ message: event.target.value })}
        />
      ) : (
        <textarea
          aria-label={`Step ${index + 1} instructions`}
          maxLength={4000}
          placeholder="What the assistant should say, e.g. ask whether they found a home yet"
          value={step.instructions}
          onChange={(event) => onChange({ instructions: event.target.value })}
        />
      )}
    </li>
  );
}
