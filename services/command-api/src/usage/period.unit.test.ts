import { describe, expect, it } from 'vitest';
import { resolvePeriod } from './period';

// Late on January 15th in New York is already January 16th in UTC; periods follow UTC.
const now = new Date('2026-01-15T23:30:00-05:00');

describe('billing periods', () => {
  it('are UTC months', () => {
    expect(resolvePeriod('current', now)).toEqual({
      name: '2026-01',
      start: new Date('2026-01-01T00:00:00Z'),
      end: new Date('2026-02-01T00:00:00Z'),
    });
  });

  it('go back across a year boundary for `previous`', () => {
    expect(resolvePeriod('previous', now).name).toBe('2025-12');
  });

  it('take an explicit month', () => {
    expect(resolvePeriod('2024-02', now)).toMatchObject({
      start: new Date('2024-02-01T00:00:00Z'),
      end: new Date('2024-03-01T00:00:00Z'),
    });
  });
});
