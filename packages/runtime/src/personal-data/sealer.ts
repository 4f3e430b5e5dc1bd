import { createCipheriv, createDecipheriv, createSecretKey, type KeyObject } from 'node:crypto';
import {
  mapPersonalData,
  reportsOnEarlierWork,
  type DomainEvent,
  type PersonalDataSealer,
  type PersonalValueSite,
} from '@leadline/events';
import { randomIv } from '../random-bytes';
import type { PersonalDataKeys, SubjectKey } from './keys';

/**
 * A personal value on the log: `sealed:1:<key id>:<s|j>:<iv, tag and ciphertext, base64url>`, `s` for
 * text and `j` for any other JSON value (a number in a lead's metadata). It is a string wherever the
 * value was, so every event schema stays as registered and a stock deserializer shows it as opaque text.
 */
const SEALED = /^sealed:1:([A-Za-z0-9_-]{16}):([sj]):([A-Za-z0-9_-]+)$/;
/** What a value sealed under an erased key reads as: the subject's hash, the same for all its values. */
export const ERASED_PREFIX = 'erased:';
export const isErased = (value: unknown): value is string =>
  typeof value === 'string' && value.startsWith(ERASED_PREFIX);

/** The event and the field's place in it: a value copied into another event or field does not open. */
const associatedData = (event: DomainEvent, site: PersonalValueSite) =>
  Buffer.from(`leadline.personal\u0000${event.type}\u0000${event.id}\u0000${site.path}`, 'utf8');

/**
 * Each subject key as a KeyObject, made once per key (the cached SubjectKey keeps the same bytes):
 * given raw bytes, node:crypto imports the key again on every call, which cost about three times
 * what encrypting a short value does. Held weakly, so a key dropped from the key cache (or erased)
 * goes with it.
 */
const keyObjects = new WeakMap<Buffer, KeyObject>();
function keyObjectOf(key: Buffer): KeyObject {
  let keyObject = keyObjects.get(key);
  if (!keyObject) keyObjects.set(key, (keyObject = createSecretKey(key)));
  return keyObject;
}

function seal(key: SubjectKey, event: DomainEvent, site: PersonalValueSite, value: unknown): string {
  const kind = typeof value === 'string' ? 's' : 'j';
  const iv = randomIv();
  const cipher = createCipheriv('aes-256-gcm', keyObjectOf(key.key!), iv);
  cipher.setAAD(associatedData(event, site));
  const plaintext = kind === 's' ? (value as string) : JSON.stringify(value);
  const ciphertext = cipher.update(plaintext, 'utf8');
  cipher.final(); // GCM is a stream mode: nothing is held back, final only computes the tag
  const sealed = Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url');
  return `sealed:1:${key.keyId}:${kind}:${sealed}`;
}

function open(key: SubjectKey, event: DomainEvent, site: PersonalValueSite, kind: string, sealed: string) {
  if (key.key === null) return `${ERASED_PREFIX}${key.subject}`;
  const bytes = Buffer.from(sealed, 'base64url');
  const decipher = createDecipheriv('aes-256-gcm', keyObjectOf(key.key), bytes.subarray(0, 12));
  decipher.setAAD(associatedData(event, site));
  decipher.setAuthTag(bytes.subarray(12, 28));
  const plaintext = decipher.update(bytes.subarray(28));
  decipher.final(); // checks the tag: a value altered or moved to another event or field throws here
  const text = plaintext.toString('utf8');
  return kind === 's' ? text : (JSON.parse(text) as unknown);
}

/**
 * Key lookups of everything encoded or decoded in the same tick go to the database together: a bulk
 * import of 1,000 leads creates its 1,000 keys in one statement, a consumer's batch reads its keys once.
 */
function batchPerTick<T, R>(run: (items: T[]) => Promise<R[]>): (item: T) => Promise<R> {
  let queued: { item: T; resolve: (result: R) => void; reject: (error: unknown) => void }[] = [];
  const flush = () => {
    const batch = queued;
    queued = [];
    run(batch.map((entry) => entry.item)).then(
      (results) => batch.forEach((entry, index) => entry.resolve(results[index]!)),
      (error: unknown) => batch.forEach((entry) => entry.reject(error)),
    );
  };
  return (item) =>
    new Promise<R>((resolve, reject) => {
      if (queued.length === 0) setImmediate(flush);
      queued.push({ item, resolve, reject });
    });
}

export class UnknownPersonalDataKeyError extends Error {}

/**
 * Seals every personal value of an event under its subject's key on the way to the log, and opens
 * them on the way back; an erased subject's values read as `erased:<subject hash>`.
 */
export function createPersonalDataSealer(keys: PersonalDataKeys): PersonalDataSealer {
  const sealingKey = batchPerTick(
    async (items: { accountId: string; subject: string; period: string | null; startOver: boolean }[]) => {
      // One lookup per account and period: a bulk import's lasting keys, a day's messages' day keys.
      const at = (item: { accountId: string; period: string | null; startOver: boolean }) =>
        `${item.accountId}\u0000${item.period ?? ''}\u0000${item.startOver}`;
      const found = new Map<string, SubjectKey>();
      for (const entries of Map.groupBy(items, at).values()) {
        const { accountId, period, startOver } = entries[0]!;
        const keysOfAccount = await keys.sealingKeys(
          accountId,
          entries.map((entry) => entry.subject),
          period,
          { startOver },
        );
        for (const [subject, key] of keysOfAccount) found.set(`${at(entries[0]!)}\u0000${subject}`, key);
      }
      return items.map((item) => found.get(`${at(item)}\u0000${item.subject}`)!);
    },
  );
  const openingKey = batchPerTick(async (keyIds: string[]) => {
    const found = await keys.openingKeys(keyIds);
    return keyIds.map((keyId) => found.get(keyId));
  });

  /** The subject of a scope, or nothing when there is none to seal for (absent, or already erased). */
  const subjectOf = (event: DomainEvent, subject: { kind: 'lead' | 'team_member'; value: unknown }) =>
    typeof subject.value === 'string' && !isErased(subject.value)
      ? keys.subjectOf(event.account_id ?? event.partner_id, subject.kind, subject.value)
      : undefined;

  return {
    async seal(event) {
      // Each scope's subject, in scope order: the keyed hash is computed once, not again when sealing.
      const names: { subject: string | undefined; expiring: boolean }[] = [];
      mapPersonalData(
        event,
        (subject, scope) =>
          void names.push({
            subject: subjectOf(event, subject),
            expiring: (scope.expiring?.length ?? 0) > 0,
          }),
      );
      // Who the person is goes under the lasting key; the conversation's content under the key of the
      // UTC day it happened (`occurred_at` is UTC), which the account's retention destroys.
      const day = event.occurred_at.slice(0, 10);
      const wanted = new Map<string, { subject: string; period: string | null }>();
      for (const { subject, expiring } of names) {
        if (!subject) continue;
        wanted.set(`${subject}\u0000`, { subject, period: null });
        if (expiring) wanted.set(`${subject}\u0000${day}`, { subject, period: day });
      }
      if (wanted.size === 0) return event;
      const accountId = event.account_id ?? event.partner_id;
      // A report on earlier work about an erased person does not key the person again.
      const startOver = !reportsOnEarlierWork.has(event.type);
      const found = new Map<string, SubjectKey>();
      const missing: Promise<unknown>[] = [];
      for (const [name, { subject, period }] of wanted) {
        const cached = keys.cachedSealingKey(accountId, subject, period);
        if (cached) found.set(name, cached);
        else
          missing.push(
            sealingKey({ accountId, subject, period, startOver }).then((key) => found.set(name, key)),
          );
      }
      if (missing.length > 0) await Promise.all(missing);
      let scope = 0;
      return mapPersonalData(event, () => {
        const { subject, expiring } = names[scope++]!;
        if (!subject) return undefined;
        const lasting = found.get(`${subject}\u0000`)!;
        // The person was erased and this event may not key them again: every value reads as erased.
        if (lasting.key === null) return () => `${ERASED_PREFIX}${lasting.subject}`;
        const daily = expiring ? found.get(`${subject}\u0000${day}`)! : lasting;
        return (value, site) =>
          isErased(value) ? value : seal(site.expiring ? daily : lasting, event, site, value);
      });
    },

    async open(event) {
      /** The event with each sealed value opened under the key `keyOf` gives (left sealed without one). */
      const openedWith = (keyOf: (keyId: string) => SubjectKey | undefined) =>
        mapPersonalData(event, () => (value, site) => {
          const match = typeof value === 'string' ? SEALED.exec(value) : null;
          if (!match) return value;
          const key = keyOf(match[1]!);
          return key ? open(key, event, site, match[2]!, match[3]!) : value;
        });
      // Nearly always every key is one this process read a moment ago: one walk, no promise.
      const missing = new Set<string>();
      const opened = openedWith((keyId) => {
        const key = keys.cachedOpeningKey(keyId);
        if (!key) missing.add(keyId);
        return key;
      });
      if (missing.size === 0) return opened;
      // Else the keys it lacks are read (with everything else decoded in this tick), and the event is
      // opened again from the start: a few values opened twice cost far less than that query.
      const found = new Map<string, SubjectKey | undefined>();
      await Promise.all([...missing].map(async (keyId) => found.set(keyId, await openingKey(keyId))));
      return openedWith((keyId) => {
        const key = found.get(keyId) ?? keys.cachedOpeningKey(keyId);
        // A key that was never in this database: the log belongs to another deployment, or the keys
        // table was lost. Refused loudly (the record is parked), never read as erased.
        if (!key) throw new UnknownPersonalDataKeyError(`No personal-data key ${keyId} in this database`);
        return key;
      });
    },
  };
}

/**
 * Whether a phone a table keeps belongs to the erased subject `subject`: in clear (the table was
 * written before the erasure) or as the erased marker (written by a rebuild after it).
 */
export function isPhoneOfSubject(
  keys: Pick<PersonalDataKeys, 'subjectOf'>,
  accountId: string,
  subject: string,
  phone: string,
): boolean {
  return phone === `${ERASED_PREFIX}${subject}` || keys.subjectOf(accountId, 'lead', phone) === subject;
}

/**
 * Of the phones a table keeps for an account, those of the erased subject: a table keyed by phone has
 * no subject column, so a service forgetting a lead hashes the account's distinct phones and deletes
 * the rows of the ones that match (an account's conversations are few enough to hash them all).
 */
export function phonesOfSubject(
  keys: Pick<PersonalDataKeys, 'subjectOf'>,
  accountId: string,
  subject: string,
  phones: Iterable<string>,
): string[] {
  return [...new Set(phones)].filter((phone) => isPhoneOfSubject(keys, accountId, subject, phone));
}
