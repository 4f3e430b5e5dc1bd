import { describe, expect, it } from 'vitest';
import { createPersonalDataKeys, personalDataKeySettings } from './keys';
import { phonesOfSubject } from './sealer';
import { rememberingSubjects } from './subjects';

const keys = createPersonalDataKeys(
  null as never,
  personalDataKeySettings({ PERSONAL_DATA_KEYS: [], PERSONAL_DATA_HASH_KEY: undefined, NODE_ENV: 'test' }),
);

describe('remembered subjects', () => {
  it('names each phone as the keys do, hashing each phone once however many erasures look', () => {
    let hashed = 0;
    const counted = {
      subjectOf: (...args: Parameters<typeof keys.subjectOf>) => (hashed++, keys.subjectOf(...args)),
    };
    const remembered = rememberingSubjects(counted);
    const phones = Array.from({ length: 50 }, (_, index) => `+1512555${String(index).padStart(4, '0')}`);
    // An account's erasure: a lead.erased per phone, each looking through all the account's phones.
    for (const phone of phones) {
      const subject = keys.subjectOf('acct', 'lead', phone);
      expect(phonesOfSubject(remembered, 'acct', subject, phones)).toEqual([phone]);
    }
    expect(hashed).toBe(phones.length);
    expect(remembered.subjectOf('acct', 'team_member', phones[0]!)).toBe(
      keys.subjectOf('acct', 'team_member', phones[0]!),
    );
    expect(remembered.subjectOf('other', 'lead', phones[0]!)).toBe(
      keys.subjectOf('other', 'lead', phones[0]!),
    );
    expect(rememberingSubjects(counted)).toBe(remembered);
  });

  it('keeps the newest subjects only', () => {
    let hashed = 0;
    const remembered = rememberingSubjects(
      { subjectOf: (...args: Parameters<typeof keys.subjectOf>) => (hashed++, keys.subjectOf(...args)) },
      2,
    );
    for (const phone of ['+15125550001', '+15125550002', '+15125550003', '+15125550001']) {
      remembered.subjectOf('acct', 'lead', phone);
    }
    expect(hashed).toBe(4);
  });
});
