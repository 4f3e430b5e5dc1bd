import { describe, expect, it } from 'vitest';
import { MAX_RUN_LENGTH, runsByType } from './runs';

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

  it('splits a long run of one type into runs of at most MAX_RUN_LENGTH, in order', () => {
    const events = Array.from({ length: MAX_RUN_LENGTH * 2 + 1 }, (_, index) => ({ type: 'a', index }));
    const runs = runsByType(events);
    expect(runs.map((run) => run.length)).toEqual([MAX_RUN_LENGTH, MAX_RUN_LENGTH, 1]);
    expect(runs.flat()).toEqual(events);
  });
});
