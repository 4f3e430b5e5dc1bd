export interface ChecklistRequirement {
  id: string;
  required: boolean;
}

export interface ChecklistProgress {
  completed_count: number;
  total_count: number;
  /** Share of required items collected; of all items when none is required; 0 for an empty checklist. */
  progress: number;
  /** Every required item is collected (and there is at least one). */
  complete: boolean;
}

/** The one rule for checklist progress, used by the lead list, lead details and the checklist. */
export function checklistProgress(
  requirements: readonly ChecklistRequirement[],
  collected: ReadonlySet<string>,
): ChecklistProgress {
  const required = requirements.filter((requirement) => requirement.required);
  const counted = required.length > 0 ? required : requirements;
  const done = counted.filter((requirement) => collected.has(requirement.id)).length;
  return {
    completed_count: requirements.filter((requirement) => collected.has(requirement.id)).length,
    total_count: requirements.length,
    progress: counted.length === 0 ? 0 : done / counted.length,
    complete: required.length > 0 && done === required.length,
  };
}
