import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_DELAYS_SECONDS, nextStep, parseRetryAfter } from './schedule';

const at = new Date('2026-03-08T09:59:45.000Z');
const failed = (retryAfterSeconds: number | null = null) => ({ kind: 'failed' as const, retryAfterSeconds });

describe('the retry schedule', () => {
  it('retries 30 s, 2 min, 10 min, 1 h and 4 h after each failed attempt, then gives up', () => {
    const times: string[] = [];
    let attemptedAt = at;
    for (let retriesDone = 0; ; retriesDone++) {
      const step = nextStep(failed(), retriesDone, DEFAULT_RETRY_DELAYS_SECONDS, attemptedAt);
      if (step.kind !== 'retry') {
        expect(step).toEqual({ kind: 'exhausted' });
        break;
      }
      times.push(step.at.toISOString());
      attemptedAt = step.at;
    }
    expect(times).toEqual([
      '2026-03-08T10:00:15.000Z',
      '2026-03-08T10:02:15.000Z',
      '2026-03-08T10:12:15.000Z',
      '2026-03-08T11:12:15.000Z',
      '2026-03-08T15:12:15.000Z',
    ]);
  });

  it('honours a Retry-After longer than the delay, never a shorter one, and caps it at a day', () => {
    expect(nextStep(failed(90), 0, [30], at)).toEqual({ kind: 'retry', at: new Date(at.getTime() + 90_000) });
    expect(nextStep(failed(5), 0, [30], at)).toEqual({ kind: 'retry', at: new Date(at.getTime() + 30_000) });
    expect(nextStep(failed(10 ** 9), 0, [30], at)).toEqual({
      kind: 'retry',
      at: new Date(at.getTime() + 86_400_000),
    });
  });

  it('ends on success and on 410, whatever is left of the schedule', () => {
    expect(nextStep({ kind: 'succeeded' }, 0, [30], at)).toEqual({ kind: 'succeeded' });
    expect(nextStep({ kind: 'gone' }, 0, [30], at)).toEqual({ kind: 'gone' });
  });

  it('gives up after the first attempt with an empty schedule', () => {
    expect(nextStep(failed(), 0, [], at)).toEqual({ kind: 'exhausted' });
  });
});

describe('Retry-After', () => {
  it.each([
    ['120', 120],
    [' 7 ', 7],
    ['Sun, 08 Mar 2026 10:01:45 GMT', 120],
    ['Sun, 08 Mar 2026 09:00:00 GMT', 0],
    ['soon', null],
    [undefined, null],
  ])('%s is %s seconds', (header, seconds) => expect(parseRetryAfter(header, at)).toBe(seconds));
});
