import type { Clock } from '@leadline/runtime';

export interface FakeClock extends Clock {
  advance(ms: number): void;
  set(to: Date): void;
}

/** A clock that moves only when told to, so schedules are tested at exact instants, never by sleeping. */
export function fakeClock(start = new Date('2026-03-02T15:00:00Z')): FakeClock {
  let current = start.getTime();
  return {
    now: () => new Date(current),
    advance(ms) {
      current += ms;
    },
    set(to) {
      current = to.getTime();
    },
  };
}
