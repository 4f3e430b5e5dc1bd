import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { personalDataKeySettings } from './keys';

describe('the personal-data key settings', () => {
  it('refuse production without the master keys or the hash key, naming what is missing', () => {
    expect(() => personalDataKeySettings({ PERSONAL_DATA_KEYS: [], NODE_ENV: 'production' })).toThrow(
      /PERSONAL_DATA_KEYS and PERSONAL_DATA_HASH_KEY must be set in production/,
    );
    expect(() =>
      personalDataKeySettings({ PERSONAL_DATA_KEYS: [randomBytes(32)], NODE_ENV: 'production' }),
    ).toThrow(/^PERSONAL_DATA_HASH_KEY must be set/);
  });

  it('stand in development keys elsewhere, and keep the configured ones newest first', () => {
    const development = personalDataKeySettings({ PERSONAL_DATA_KEYS: [] });
    expect(development.masterKeys).toHaveLength(1);
    expect(development.hashKey).toHaveLength(32);
    const [newest, older, hashKey] = [randomBytes(32), randomBytes(32), randomBytes(32)];
    expect(
      personalDataKeySettings({
        PERSONAL_DATA_KEYS: [newest, older],
        PERSONAL_DATA_HASH_KEY: hashKey,
        NODE_ENV: 'production',
      }),
    ).toEqual({ masterKeys: [newest, older], hashKey });
  });
});
