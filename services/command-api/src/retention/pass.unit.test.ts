import { describe, expect, it } from 'vitest';
import { retentionCutoff } from './pass';

describe('the retention cutoff', () => {
  it('is the start of the UTC day retention_days before today, whatever the hour', () => {
    for (const now of ['2026-03-01T00:00:00.000Z', '2026-03-01T13:30:00.000Z', '2026-03-01T23:59:59.999Z']) {
      // 29 January is more than 30 days before 1 March: it expires; 30 January stays.
      expect(retentionCutoff(new Date(now), 30).toISOString()).toBe('2026-01-30T00:00:00.000Z');
    }
  });

  it('counts calendar days across a leap day, and keeps yesterday with one day', () => {
    expect(retentionCutoff(new Date('2028-03-01T08:00:00.000Z'), 30).toISOString()).toBe(
      '2028-01-31T00:00:00.000Z',
    );
    expect(retentionCutoff(new Date('2026-07-04T08:00:00.000Z'), 1).toISOString()).toBe(
      '2026-07-03T00:00:00.000Z',
    );
  });
});
