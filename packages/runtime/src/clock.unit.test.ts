import { describe, expect, it } from 'vitest';
import { validate, version } from 'uuid';
import { newUuid } from './clock';

describe('newUuid', () => {
  it('makes valid, distinct UUID v7s that sort in the order they were made, within a millisecond too', () => {
    // Far more ids than one millisecond holds, and more than one block of random bytes.
    const ids = Array.from({ length: 20_000 }, () => newUuid());
    expect(ids.every((id) => validate(id) && version(id) === 7)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    const millisecond = (id: string) => id.slice(0, 13);
    expect(new Set(ids.map(millisecond)).size).toBeLessThan(ids.length);
  });

  it('carries the current time', () => {
    const before = Date.now();
    const id = newUuid();
    const at = parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    expect(at).toBeGreaterThanOrEqual(before);
    expect(at).toBeLessThanOrEqual(Date.now() + 1);
  });
});
