import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createPersonalDataKeys, personalDataKeySettings } from './keys';
import { phonesOfSubject } from './sealer';

const settings = personalDataKeySettings({
  PERSONAL_DATA_KEYS: [],
  PERSONAL_DATA_HASH_KEY: undefined,
  NODE_ENV: 'test',
});
/** The keyed hash as the README defines it, computed here without the keys' memory of it. */
const hashOf = (kind: string, accountId: string, value: string) =>
  createHmac('sha256', settings.hashKey)
    .update(`${kind}\u0000${accountId}\u0000${value}`)
    .digest()
    .subarray(0, 16)
    .toString('base64url');

describe('the subject a phone names', () => {
  it('is the keyed hash, remembered or not, for each kind and account', () => {
    let at = 0;
    const keys = createPersonalDataKeys(null as never, settings, { cacheMs: 1_000, now: () => at });
    const phones = Array.from({ length: 50 }, (_, index) => `+1512555${String(index).padStart(4, '0')}`);
    // An account's erasure: a lead.erased per phone, each looking through all the account's phones.
    for (const phone of phones) {
      expect(phonesOfSubject(keys, 'acct', hashOf('lead', 'acct', phone), phones)).toEqual([phone]);
    }
    expect(keys.subjectOf('acct', 'team_member', phones[0]!)).toBe(hashOf('team_member', 'acct', phones[0]!));
    expect(keys.subjectOf('other', 'lead', phones[0]!)).toBe(hashOf('lead', 'other', phones[0]!));
    // Past the time a subject is remembered, it is hashed again, to the same.
    at = 5_000;
    expect(keys.subjectOf('acct', 'lead', phones[1]!)).toBe(hashOf('lead', 'acct', phones[1]!));
  });
});
