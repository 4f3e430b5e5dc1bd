import { describe, expect, it } from 'vitest';
import { withoutQuery } from './log';

describe('request logging', () => {
  it('never writes a query string, where embed tokens travel', () => {
    expect(withoutQuery('/embed?token=lle_secret&view=leads')).toBe('/embed?[redacted]');
    expect(withoutQuery('/v1/accounts')).toBe('/v1/accounts');
  });
});
