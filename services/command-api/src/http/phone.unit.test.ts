import { describe, expect, it } from 'vitest';
import { normalizePhone } from '@leadline/domain';

describe('phone normalization', () => {
  it.each([
    ['5125550123', '+15125550123'],
    ['+15125550123', '+15125550123'],
    ['(512) 555-0123', '+15125550123'],
    ['1 512 555 0123', '+15125550123'],
    ['+44 20 7183 8750', '+442071838750'],
  ])('%s is %s', (input, expected) => expect(normalizePhone(input)).toBe(expected));

  it.each(['', 'abc', '123', '+1555012345', '512555012345678'])('%s is not a phone number', (input) =>
    expect(normalizePhone(input)).toBeUndefined(),
  );
});
