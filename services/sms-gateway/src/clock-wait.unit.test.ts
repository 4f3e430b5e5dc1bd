import type { Timers } from '@leadline/runtime';
import { fakeClock } from '@leadline/test-kit';
import { describe, expect, it } from 'vitest';
import { waitOnClock } from './clock-wait';

describe('waiting on the gateway’s clock', () => {
  it('ends once its clock reaches the instant, on the clock’s own timers', async () => {
    const clock = fakeClock(new Date('2026-03-02T15:00:00.000Z'));
    const until = new Date('2026-03-02T15:00:01.000Z');
    const waited = waitOnClock(clock, clock, until);
    clock.advance(999);
    clock.advance(1);
    expect(await waited).toBe(true);
    expect(await waitOnClock(clock, clock, until)).toBe(true);
  });

  it('gives up when its clock stood still through the wait, or when the signal aborts', async () => {
    const clock = fakeClock(new Date('2026-03-02T15:00:00.000Z'));
    // Timers that fire at once: a clock moved by hand does not move with them.
    const immediate: Timers = { after: (_ms, fire) => (setImmediate(fire), () => undefined) };
    expect(await waitOnClock(clock, immediate, new Date('2026-03-02T15:00:01.000Z'))).toBe(false);
    const aborting = new AbortController();
    const waited = waitOnClock(clock, clock, new Date('2026-03-02T15:00:01.000Z'), aborting.signal);
    aborting.abort();
    expect(await waited).toBe(false);
  });
});
