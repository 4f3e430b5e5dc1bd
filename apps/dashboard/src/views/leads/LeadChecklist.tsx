import type { Schemas } from '../../lib/api';
import { percent } from '../../lib/format';

/** The lead's checklist: how much of it is collected, and each item with its value once collected. */
export function LeadChecklist({ checklist }: { checklist: Schemas['Checklist'] }) {
  return (
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
  );
}
