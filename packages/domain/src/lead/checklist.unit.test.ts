import { describe, expect, it } from 'vitest';
import { checklistProgress } from './checklist';

const requirements = [
  { id: 'id-doc', required: true },
  { id: 'paystub', required: true },
  { id: 'email', required: false },
];

describe('checklist progress', () => {
  it('counts required items for progress and completeness, every item for the counts', () => {
    expect(checklistProgress(requirements, new Set(['id-doc', 'email']))).toEqual({
      completed_count: 2,
      total_count: 3,
      progress: 0.5,
      complete: false,
    });
  });

  it('is complete when every required item is in, optional ones notwithstanding', () => {
    expect(checklistProgress(requirements, new Set(['id-doc', 'paystub']))).toMatchObject({
      progress: 1,
      complete: true,
    });
  });

  it('counts optional items when none is required, and is never complete then', () => {
    const optional = [
      { id: 'a', required: false },
      { id: 'b', required: false },
    ];
    expect(checklistProgress(optional, new Set(['a']))).toMatchObject({ progress: 0.5, complete: false });
  });

  it('is 0 and incomplete for an empty checklist, and ignores values of deleted requirements', () => {
    expect(checklistProgress([], new Set(['deleted-requirement']))).toEqual({
      completed_count: 0,
      total_count: 0,
      progress: 0,
      complete: false,
    });
  });
});
