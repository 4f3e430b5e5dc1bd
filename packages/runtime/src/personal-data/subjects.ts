import type { PersonalDataKeys } from './keys';
import { ERASED_PREFIX } from './sealer';

type SubjectOf = Pick<PersonalDataKeys, 'subjectOf'>;

const remembering = new WeakMap<SubjectOf, SubjectOf>();

/**
 * `keys.subjectOf`, remembered per phone: a consumer forgetting an erased lead hashes the account's
 * phones to find the lead's (see `phonesOfSubject`), and an account's erasure brings a `lead.erased` for
 * every one of them, so without this a thousand leads cost a million keyed hashes in every consumer.
 * The hash key never changes while a process runs, so a remembered subject stays right; the newest
 * `max` are kept. The same wrapper is handed out for the same keys.
 */
export function rememberingSubjects(keys: SubjectOf, max = 200_000): SubjectOf {
  const existing = remembering.get(keys);
  if (existing) return existing;
  const known = new Map<string, string>();
  const wrapper: SubjectOf = {
    subjectOf(accountId, kind, value) {
      const key = `${kind}\u0000${accountId}\u0000${value}`;
      let subject = known.get(key);
      if (subject === undefined) {
        subject = keys.subjectOf(accountId, kind, value);
        if (known.size >= max) known.delete(known.keys().next().value!);
        known.set(key, subject);
      }
      return subject;
    },
  };
  remembering.set(keys, wrapper);
  return wrapper;
}

/**
 * The subject a lead's phone names in an account: its keyed hash, or, for the erased marker a rebuild
 * writes (`erased:<subject>`), the subject it carries.
 */
export function subjectOfPhone(keys: SubjectOf, accountId: string, phone: string): string {
  return phone.startsWith(ERASED_PREFIX)
    ? phone.slice(ERASED_PREFIX.length)
    : keys.subjectOf(accountId, 'lead', phone);
}
