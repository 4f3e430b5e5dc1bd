import type { Clock, Timers } from '@leadline/runtime';

export interface FakeClock extends Clock, Timers {
  advance(ms: number): void;
  set(to: Date): void;
}

/**
 * A clock that moves only when told to, so schedules are tested at exact instants, never by sleeping.
 * Its timers fire, in time order, as it is moved past them.
 */
export function fakeClock(start = new Date('2026-03-02T15:00:00Z')): FakeClock {
  let current = start.getTime();
  let sequence = 0;
  const timers = new Map<number, { at: number; fire: () => void }>();
  const moveTo = (to: number) => {
    for (;;) {
      const due = [...timers]
        .filter(([, timer]) => timer.at <= to)
        .sort(([a, x], [b, y]) => x.at - y.at || a - b);
      const next = due[0];
      if (!next) break;
      timers.delete(next[0]);
      current = Math.max(current, next[1].at);
      next[1].fire();
    }
    current = to;
  };
  return {
    now: () => new Date(current),
    advance(ms) {
      moveTo(current + ms);
    },
    set(to) {
      moveTo(to.getTime());
    },
    after(ms, fire) {
      const id = ++sequence;
      timers.set(id, { at: current + ms, fire });
      return () => void timers.delete(id);
    },
  };
}
