/**
 * A delete that asks first: the link turns into "Delete for good" and "Keep". The caller holds
 * `confirming`, to say what deleting will do while the question is open.
 */
export function DeleteButton(props: {
  label: string;
  confirming: boolean;
  onConfirmingChange(confirming: boolean): void;
  onDelete(): void;
}) {
  const { label, confirming, onConfirmingChange, onDelete } = props;
  return confirming ? (
    <>
      <button className="danger" onClick={onDelete}>
        Delete for good
      </button>
      <button className="link" onClick={() => onConfirmingChange(false)}>
        Keep
      </button>
    </>
  ) : (
    <button className="link danger-link" onClick={() => onConfirmingChange(true)}>
      {label}
    </button>
  );
}
