import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { displayPrefix, generateApiKey, hashApiKey, hasValidChecksum } from './api-keys';

describe('partner API keys', () => {
  it('have a recognizable prefix, a valid checksum, and differ every time', () => {
    const keys = Array.from({ length: 50 }, generateApiKey);
    expect(new Set(keys).size).toBe(50);
    for (const key of keys) {
      expect(key).toMatch(/^llk_[0-9A-Za-z]{38}$/);
      expect(hasValidChecksum(key)).toBe(true);
    }
  });

  it('detect a mistyped character through the checksum', () => {
    const key = generateApiKey();
    const typo = key.slice(0, 10) + (key[10] === 'a' ? 'b' : 'a') + key.slice(11);
    expect(hasValidChecksum(typo)).toBe(false);
  });

  it('keep the checksum keys were issued with: six base62 digits of the first four bytes of SHA-256', () => {
    // The reading keys were first issued with, in BigInt, most significant digit first.
    const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
    const issued = (body: string) => {
      let value = BigInt(`0x${createHash('sha256').update(body).digest('hex').slice(0, 8)}`);
      let digits = '';
      for (let i = 0; i < 6; i++, value /= 62n) digits = alphabet[Number(value % 62n)] + digits;
      return digits;
    };
    for (let i = 0; i < 500; i++) {
      const body = generateApiKey().slice(0, -6);
      expect(hasValidChecksum(body + issued(body)), body).toBe(true);
    }
  });

  it('are stored as a hash that reveals nothing of the key but a display prefix', () => {
    const key = generateApiKey();
    expect(hashApiKey(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey(key)).not.toContain(key.slice(4, 12));
    expect(displayPrefix(key)).toBe(key.slice(0, 10));
  });
});
