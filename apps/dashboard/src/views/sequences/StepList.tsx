import type { Schemas } from '../../lib/api';

type Step = Schemas['Sequence']['steps'][number];

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
