import { describe, expect, it } from 'vitest';
import { diffSnapshots, hasChanges, type AccountSnapshot } from './live';

const snapshot = (
  conversations: Record<string, string>,
  leads: Record<string, string>,
  complete: string[] = [],
): AccountSnapshot => ({
  conversations: new Map(Object.entries(conversations)),
  leads: new Map(Object.entries(leads)),
  completeChecklists: new Set(complete),
});

describe('live changes of an account', () => {
  it('names the conversations and leads that changed, appeared or went, and checklists that completed', () => {
    const before = snapshot({ '+1': 'a', '+2': 'b' }, { '+1': 'x', '+3': 'y' }, ['+3']);
    const after = snapshot({ '+1': 'a', '+2': 'b2', '+4': 'n' }, { '+1': 'x2' }, ['+1']);
    expect(diffSnapshots(before, after)).toEqual({
      conversations: ['+2', '+4'],
      leads: ['+1', '+3'],
      checklist_completed: ['+1'],
    });
  });

  it('finds nothing when nothing of the account changed', () => {
    const same = snapshot({ '+1': 'a' }, { '+1': 'x' }, ['+1']);
    expect(hasChanges(diffSnapshots(same, snapshot({ '+1': 'a' }, { '+1': 'x' }, ['+1'])))).toBe(false);
  });
});
