import type { Clock, Timers } from '@leadline/runtime';

/**
 * Sleeps until `until` on the gateway's clock, on that clock's timers (`timers` must run at the clock's
 * pace: the wall's for the wall clock). True once the clock reached it; false when `signal` aborted or
 * the clock stood still through a whole wait (a clock moved by hand, as tests do: the caller then hands
 * its work back rather than wait for a time that may never come). A timer firing a little early is
 * waited out again.
 */
export async function waitOnClock(
  clock: Clock,
  timers: Timers,
  until: Date,
  signal?: AbortSignal,
): Promise<boolean> {
  for (;;) {
    const before = clock.now().getTime();
    const remaining = until.getTime() - before;
    if (remaining <= 0) return true;
    if (signal?.aborted) return false;
    await new Promise<void>((resolve) => {
      let cancel = () => {};
      const done = () => {
        signal?.removeEventListener('abort', done);
        cancel();
        resolve();
      };
      cancel = timers.after(remaining, done);
      signal?.addEventListener('abort', done, { once: true });
    });
    if (clock.now().getTime() === before) return false;
  }
}
