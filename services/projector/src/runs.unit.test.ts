import { describe, expect, it } from 'vitest';
import { runsByType } from './runs';

describe('runs by type', () => {
  it('groups consecutive events of one type and keeps the order', () => {
    const events = ['a', 'a', 'b', 'a', 'c', 'c'].map((type, index) => ({ type, index }));
    expect(runsByType(events).map((run) => run.map((event) => event.index))).toEqual([
      [0, 1],
      [2],
      [3],
      [4, 5],
    ]);
  });

  it('has no runs for no events', () => expect(runsByType([])).toEqual([]));
});
