import { describe, expect, it } from 'vitest';
import { validateValue } from './validate';

describe('checklist values, validated by type', () => {
  it.each([
    ['email', ' Ana@Example.COM ', 'ana@example.com'],
    ['phone', '(512) 555-0123', '+15125550123'],
    ['phone', '+44 20 7946 0958', '+442079460958'],
    ['number', '$85,000', '85000'],
    ['number', '12.50', '12.5'],
    ['date', '1990-04-01', '1990-04-01'],
    ['text', '  123 Main St  ', '123 Main St'],
  ] as const)('%s %j is recorded as %j', (type, raw, value) => {
    expect(validateValue(type, raw)).toEqual({ ok: true, value });
  });

  it.each([
    ['email', 'ana at example'],
    ['phone', '12'],
    ['number', 'about ten'],
    ['date', '1990-02-30'],
    ['date', '04/01/1990'],
    ['text', '   '],
  ] as const)('%s %j is refused with a reason', (type, raw) => {
    const result = validateValue(type, raw);
    expect(result.ok).toBe(false);
  });
});
