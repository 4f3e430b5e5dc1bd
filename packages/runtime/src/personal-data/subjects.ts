import type { PersonalDataKeys } from './keys';
import { ERASED_PREFIX } from './sealer';

type SubjectOf = Pick<PersonalDataKeys, 'subjectOf'>;

/**
 * The subject a lead's phone names in an account: its keyed hash, or, for the erased marker a rebuild
 * writes (`erased:<subject>`), the subject it carries.
 */
export function subjectOfPhone(keys: SubjectOf, accountId: string, phone: string): string {
  return phone.startsWith(ERASED_PREFIX)
    ? phone.slice(ERASED_PREFIX.length)
    : keys.subjectOf(accountId, 'lead', phone);
}
