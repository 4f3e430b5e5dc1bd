import { createDb } from '@leadline/runtime';
import { afterAll, describe, expect, it } from 'vitest';
import { findLiveToken, generateEmbedToken } from './tokens';

// A database nobody listens on: any lookup fails, so an undefined answer proves none was made.
const db = createDb('postgres://postgres@127.0.0.1:1/none', { maxConnections: 1 });
afterAll(() => db.destroy());

describe('embed tokens', () => {
  it('refuses a token of another shape than ours without looking it up', async () => {
    const token = generateEmbedToken();
    for (const malformed of [
      '',
      'lle_',
      'lle_short',
      `${token}x`,
      token.replace('lle_', 'llk_'),
      `${token.slice(0, -1)}=`,
    ]) {
      expect(await findLiveToken(db, malformed, new Date())).toBeUndefined();
    }
  });

  it('looks up a token of our shape', async () => {
    await expect(findLiveToken(db, generateEmbedToken(), new Date())).rejects.toThrow();
  });
});
