import { createHash, createHmac, createSecretKey, randomBytes } from 'node:crypto';
import type { DataSubjectKind } from '@leadline/events';
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { InfrastructureConfig } from '../config';
import type { Database } from '../db/schema';
import { createSecretBox, type SecretBox } from '../secret-box';

/**
 * The keys that seal each data subject's personal data on the log, kept off the log in Postgres and
 * wrapped by the master keys. A process caches what it read for `cacheMs`: an erasure therefore takes
 * effect in every running process within that time, and nothing sealed under an erased key opens again.
 */
export interface PersonalDataKeys {
  /** The keyed hash naming a subject: the same for the same phone in the same account, nothing else. */
  subjectOf(accountId: string, kind: DataSubjectKind, value: string): string;
  /**
   * The live key of each subject, created where there is none (one query for all that are new): the
   * subject's lasting key, or with `period` (a UTC day, `YYYY-MM-DD`) its key for that day's content,
   * which the account's retention destroys (see `expirePeriods`).
   *
   * With `startOver: false`, a subject whose lasting key was erased and who has no live one is not
   * keyed again: it is answered with its erased lasting key (`key` null), and what would be sealed
   * reads as erased (see `reportsOnEarlierWork`).
   */
  sealingKeys(
    accountId: string,
    subjects: readonly string[],
    period?: string | null,
    options?: { startOver?: boolean },
  ): Promise<Map<string, SubjectKey>>;
  /** Each key by id: its bytes, or null when the subject was erased. Unknown ids are left out. */
  openingKeys(keyIds: readonly string[]): Promise<Map<string, SubjectKey>>;
  /**
   * What `sealingKeys` and `openingKeys` would answer from this process's cache alone, or undefined
   * when they would ask the database: most values are sealed and opened under a key read a moment
   * ago, and a lookup that needs no query should cost no promise either.
   */
  cachedSealingKey(accountId: string, subject: string, period?: string | null): SubjectKey | undefined;
  cachedOpeningKey(keyId: string): SubjectKey | undefined;
  /**
   * Destroys every key of the subject; what they sealed reads as erased from now on, everywhere. The
   * erased keys stay as the erasure's record, at `erasedAt` (the erasure event's time; now by default).
   */
  eraseSubject(accountId: string, subject: string, erasedAt?: Date): Promise<void>;
  /** Whether the account has a live key of a day before `before` (`YYYY-MM-DD`). */
  hasPeriodsBefore(accountId: string, before: string): Promise<boolean>;
  /**
   * Destroys the account's keys of every day before `before` (`YYYY-MM-DD`), of all its subjects:
   * the content they sealed reads as erased from now on. Returns how many were destroyed.
   */
  expirePeriods(accountId: string, before: string, erasedAt: Date): Promise<number>;
  /**
   * Destroys every live key of the account (its leads' and its team members'), through `executor` when
   * given (a transaction, so the keys go only if it commits), and forgets the live keys this process
   * remembers for the account (called again after that commit, it forgets any read meanwhile).
   * Returns how many it destroyed.
   */
  eraseAccount(accountId: string, erasedAt: Date, executor?: Kysely<Database>): Promise<number>;
}

export interface SubjectKey {
  keyId: string;
  subject: string;
  /** Null: erased. */
  key: Buffer | null;
}

/** Stand-ins outside production, derived from public strings: fine for a laptop, worthless as protection. */
const developmentKey = (purpose: string) =>
  createHash('sha256').update(`leadline local development ${purpose}`).digest();

export interface PersonalDataKeySettings {
  masterKeys: Buffer[];
  hashKey: Buffer;
}

/** The master keys and the hash key from the configuration; production must set both. */
export function personalDataKeySettings(
  config: Pick<InfrastructureConfig, 'PERSONAL_DATA_KEYS' | 'PERSONAL_DATA_HASH_KEY' | 'NODE_ENV'>,
): PersonalDataKeySettings {
  const production = config.NODE_ENV === 'production';
  const missing = [
    ...(config.PERSONAL_DATA_KEYS.length === 0 ? ['PERSONAL_DATA_KEYS'] : []),
    ...(config.PERSONAL_DATA_HASH_KEY ? [] : ['PERSONAL_DATA_HASH_KEY']),
  ];
  if (production && missing.length > 0) {
    throw new Error(
      `${missing.join(' and ')} must be set in production: 32 random bytes each, as hex or base64 (openssl rand -base64 32).`,
    );
  }
  return {
    masterKeys:
      config.PERSONAL_DATA_KEYS.length > 0
        ? config.PERSONAL_DATA_KEYS
        : [developmentKey('personal data key')],
    hashKey: config.PERSONAL_DATA_HASH_KEY ?? developmentKey('personal data hash key'),
  };
}

interface KeyRow {
  key_id: string;
  account_id: string;
  subject: string;
  wrapped_key: string | null;
}

interface Cached {
  value: SubjectKey;
  until: number;
}

/**
 * The live keys of `subjects` for `period`, and a new key for each that has none, in one statement: a
 * key is made and wrapped for every subject asked for (a few µs each, wasted where one is live), which
 * costs less than a second round trip for each new person. A subject keyed by another process a moment
 * ago keeps its key: ours is dropped (the insert does nothing), and theirs is read after. Without
 * `startOver`, an erased subject (an erased lasting key, no live one) gets no new key: its latest
 * erased lasting key is among the `live` rows, with no key.
 */
async function liveOrNewKeys(
  db: Kysely<Database>,
  box: SecretBox,
  accountId: string,
  subjects: readonly string[],
  period: string | null,
  startOver: boolean,
): Promise<{ made: SubjectKey[]; live: KeyRow[] }> {
  const made = new Map<string, Buffer>();
  const wanted = subjects.map((subject) => {
    // The key id and the key from one draw of the generator: 12 bytes, then 32.
    const random = randomBytes(44);
    const keyId = random.subarray(0, 12).toString('base64url');
    const key = random.subarray(12);
    made.set(keyId, key);
    return {
      keyId,
      subject,
      wrapped: box.seal(key.toString('base64'), { accountId, personalDataKeyId: keyId }),
    };
  });
  // A new key is durable before it is used: events sealed with it go to the log next, and a key lost
  // with the last commits of a server running with synchronous_commit off (a crash, an immediate stop)
  // would leave them unreadable for good. Set for this statement's own transaction, whatever the
  // server's or role's default, in the same round trip.
  const { rows: answered } = await sql<KeyRow & { made: boolean }>`
    with durable as (
      select set_config('synchronous_commit', 'on', true)
    ), wanted as (
      select w.* from durable, unnest(
        ${wanted.map((entry) => entry.keyId)}::text[],
        ${wanted.map((entry) => entry.subject)}::text[],
        ${wanted.map((entry) => entry.wrapped)}::text[]
      ) as w (key_id, subject, wrapped_key)
    ), live as (
      select key_id, account_id, subject, wrapped_key from personal_data_keys
      where account_id = ${accountId} and erased_at is null
        and period is not distinct from ${period}::date
        and subject in (select subject from wanted)
    ), erased as (
      select distinct on (subject) key_id, account_id, subject, null::text as wrapped_key
      from personal_data_keys
      where ${!startOver} and account_id = ${accountId} and period is null and erased_at is not null
        and subject in (select subject from wanted)
        and not exists (
          select 1 from personal_data_keys k
          where k.account_id = ${accountId} and k.subject = personal_data_keys.subject
            and k.period is null and k.erased_at is null)
      order by subject, erased_at desc
    ), inserted as (
      insert into personal_data_keys (key_id, account_id, subject, wrapped_key, period)
      select key_id, ${accountId}::text, subject, wrapped_key, ${period}::date from wanted
      where subject not in (select subject from live) and subject not in (select subject from erased)
      on conflict (account_id, subject, coalesce(period, '-infinity'::date)) where erased_at is null
      do nothing
      returning key_id, account_id, subject, wrapped_key
    )
    select *, false as made from live
    union all
    select *, false as made from erased
    union all
    select *, true as made from inserted`.execute(db);
  const live = answered.filter((row) => !row.made);
  const answeredSubjects = new Set(answered.map((row) => row.subject));
  const raced = subjects.filter((subject) => !answeredSubjects.has(subject));
  if (raced.length > 0) {
    live.push(
      ...(await db
        .selectFrom('personal_data_keys')
        .select(['key_id', 'account_id', 'subject', 'wrapped_key'])
        .where('account_id', '=', accountId)
        .where('subject', 'in', raced)
        .where('erased_at', 'is', null)
        .where('period', period === null ? 'is' : '=', period)
        .execute()
        .then((rows) => rows.map((row) => ({ ...row, made: false })))),
    );
  }
  return {
    made: answered
      .filter((row) => row.made)
      .map((row) => ({ keyId: row.key_id, subject: row.subject, key: made.get(row.key_id)! })),
    live,
  };
}

/** Destroys the account's live keys: the subject's, those of days before `periodBefore`, or all. */
function destroyKeys(
  executor: Kysely<Database>,
  accountId: string,
  erasedAt: Date | RawBuilder<Date>,
  only: { subject?: string; periodBefore?: string } = {},
) {
  return executor
    .updateTable('personal_data_keys')
    .set({ wrapped_key: null, erased_at: erasedAt })
    .where('account_id', '=', accountId)
    .where('erased_at', 'is', null)
    .$if(only.subject !== undefined, (keys) => keys.where('subject', '=', only.subject!))
    .$if(only.periodBefore !== undefined, (keys) => keys.where('period', '<', only.periodBefore!))
    .returning(['key_id', 'subject', sql<string | null>`period::text`.as('period')])
    .execute();
}

/**
 * The keyed hash naming a subject, remembered: a step's events name the same lead three or four times,
 * and a consumer forgetting an erased lead hashes all the account's phones to find the lead's
 * (phonesOfSubject), once per `lead.erased` of an account's erasure (a thousand leads would be a
 * million keyed hashes). Kept no longer than keys are (`cacheMs`), and the newest 200,000 only: the
 * phone is the entry's name, and an erased person's must not stay in memory (`forget`).
 */
function rememberedSubjects(hashKeyBytes: Buffer, { cacheMs, now }: { cacheMs: number; now: () => number }) {
  // A KeyObject made once: given raw bytes, createHmac imports the key again on every subject hashed.
  const hashKey = createSecretKey(hashKeyBytes);
  const subjects = new Map<string, { subject: string; until: number }>();
  return {
    subjectOf(accountId: string, kind: DataSubjectKind, value: string): string {
      const hashed = `${kind}\u0000${accountId}\u0000${value}`;
      const cached = subjects.get(hashed);
      if (cached && cached.until > now()) return cached.subject;
      const subject = createHmac('sha256', hashKey)
        .update(hashed)
        .digest()
        .subarray(0, 16)
        .toString('base64url');
      // Deleted first so that the entry moves to the end: the oldest is the first to go.
      subjects.delete(hashed);
      subjects.set(hashed, { subject, until: now() + cacheMs });
      if (subjects.size > 200_000) subjects.delete(subjects.keys().next().value!);
      return subject;
    },
    /** Forgets the entries `erased` picks, by what was hashed or by the subject it named. */
    forget(erased: (hashed: string, subject: string) => boolean) {
      for (const [hashed, { subject }] of subjects) if (erased(hashed, subject)) subjects.delete(hashed);
    },
  };
}

export function createPersonalDataKeys(
  db: Kysely<Database>,
  settings: PersonalDataKeySettings,
  { cacheMs = 60_000, now = Date.now } = {},
): PersonalDataKeys {
  const box: SecretBox = createSecretBox(settings.masterKeys);
  const byId = new Map<string, Cached>();
  const liveBySubject = new Map<string, Cached>();
  const subjectKey = (accountId: string, subject: string, period: string | null = null) =>
    `${accountId}\u0000${subject}\u0000${period ?? ''}`;

  const unwrap = (row: {
    key_id: string;
    account_id: string;
    subject: string;
    wrapped_key: string | null;
  }) => ({
    keyId: row.key_id,
    subject: row.subject,
    key:
      row.wrapped_key === null
        ? null
        : Buffer.from(
            box.open(row.wrapped_key, { accountId: row.account_id, personalDataKeyId: row.key_id }),
            'base64',
          ),
  });

  function remember(accountId: string, value: SubjectKey, period: string | null = null) {
    // An erased key never comes back, so it is remembered for good; a live one only for a while.
    const until = value.key === null ? Number.POSITIVE_INFINITY : now() + cacheMs;
    byId.set(value.keyId, { value, until });
    if (value.key) liveBySubject.set(subjectKey(accountId, value.subject, period), { value, until });
    // Bounded: a process that saw millions of subjects keeps the newest (Map keeps insertion order).
    for (const cache of [byId, liveBySubject]) {
      while (cache.size > 100_000) cache.delete(cache.keys().next().value!);
    }
  }
  /** Destroyed keys: no longer handed out for sealing here, and read as erased from now on. */
  function forget(
    accountId: string,
    rows: readonly { key_id: string; subject: string; period: string | null }[],
  ) {
    for (const row of rows) {
      liveBySubject.delete(subjectKey(accountId, row.subject, row.period));
      remember(accountId, { keyId: row.key_id, subject: row.subject, key: null });
    }
  }
  const fresh = (cached: Cached | undefined) => (cached && cached.until > now() ? cached.value : undefined);
  const subjects = rememberedSubjects(settings.hashKey, { cacheMs, now });

  return {
    subjectOf: subjects.subjectOf,

    cachedSealingKey(accountId, subject, period = null) {
      return fresh(liveBySubject.get(subjectKey(accountId, subject, period)));
    },

    cachedOpeningKey(keyId) {
      return fresh(byId.get(keyId));
    },

    async sealingKeys(accountId, subjects, period = null, { startOver = true } = {}) {
      const found = new Map<string, SubjectKey>();
      const missing: string[] = [];
      for (const subject of new Set(subjects)) {
        const cached = fresh(liveBySubject.get(subjectKey(accountId, subject, period)));
        if (cached) found.set(subject, cached);
        else missing.push(subject);
      }
      if (missing.length === 0) return found;
      const { made, live } = await liveOrNewKeys(db, box, accountId, missing, period, startOver);
      for (const value of made) {
        // Used as made rather than unwrapped again.
        remember(accountId, value, period);
        found.set(value.subject, value);
      }
      for (const row of live) {
        const value = unwrap(row);
        remember(accountId, value, period);
        found.set(row.subject, value);
      }
      return found;
    },

    async openingKeys(keyIds) {
      const found = new Map<string, SubjectKey>();
      const missing: string[] = [];
      for (const keyId of new Set(keyIds)) {
        const cached = fresh(byId.get(keyId));
        if (cached) found.set(keyId, cached);
        else missing.push(keyId);
      }
      if (missing.length === 0) return found;
      const rows = await db
        .selectFrom('personal_data_keys')
        .select(['key_id', 'account_id', 'subject', 'wrapped_key'])
        .where('key_id', 'in', missing)
        .execute();
      for (const row of rows) {
        const value = unwrap(row);
        remember(row.account_id, value);
        found.set(row.key_id, value);
      }
      return found;
    },

    async eraseSubject(accountId, subject, erasedAt) {
      const erased = await destroyKeys(db, accountId, erasedAt ?? sql<Date>`now()`, { subject });
      forget(accountId, erased);
      subjects.forget((_hashed, erased) => erased === subject);
    },

    async hasPeriodsBefore(accountId, before) {
      const row = await db
        .selectFrom('personal_data_keys')
        .select('key_id')
        .where('account_id', '=', accountId)
        .where('erased_at', 'is', null)
        .where('period', '<', before)
        .limit(1)
        .executeTakeFirst();
      return row !== undefined;
    },

    async expirePeriods(accountId, before, erasedAt) {
      const expired = await destroyKeys(db, accountId, erasedAt, { periodBefore: before });
      forget(accountId, expired);
      return expired.length;
    },

    async eraseAccount(accountId, erasedAt, executor = db) {
      const erased = await destroyKeys(executor, accountId, erasedAt);
      // Remembered as erased only once that is committed: a transaction that rolls back leaves them live.
      for (const row of erased) {
        if (executor === db) remember(accountId, { keyId: row.key_id, subject: row.subject, key: null });
        else byId.delete(row.key_id);
      }
      // Every live key of the account this process remembers, whether this call erased it or not.
      const prefix = `${accountId}\u0000`;
      for (const key of liveBySubject.keys()) if (key.startsWith(prefix)) liveBySubject.delete(key);
      subjects.forget((hashed) => hashed.includes(`\u0000${prefix}`));
      return erased.length;
    },
  };
}

/**
 * After a new master key is put first in PERSONAL_DATA_KEYS (and every process restarted with it):
 * wraps every live subject key under it, a thousand at a time, so the old master key can then be
 * removed. The subject keys themselves do not change, so nothing on the log is rewritten. Returns how
 * many were re-wrapped; running it again finds none.
 */
export async function rewrapPersonalDataKeys(
  db: Kysely<Database>,
  settings: Pick<PersonalDataKeySettings, 'masterKeys'>,
): Promise<number> {
  const box = createSecretBox(settings.masterKeys);
  let rewrapped = 0;
  for (let after = ''; ;) {
    const rows = await db
      .selectFrom('personal_data_keys')
      .select(['key_id', 'account_id', 'wrapped_key'])
      .where('wrapped_key', 'is not', null)
      .where('key_id', '>', after)
      .orderBy('key_id')
      .limit(1_000)
      .execute();
    if (rows.length === 0) return rewrapped;
    after = rows.at(-1)!.key_id;
    for (const row of rows) {
      if (box.isCurrent(row.wrapped_key!)) continue;
      const binding = { accountId: row.account_id, personalDataKeyId: row.key_id };
      const rewrapped_key = box.seal(box.open(row.wrapped_key!, binding), binding);
      // Only if still live and unchanged: an erasure meanwhile wins.
      const { numUpdatedRows } = await db
        .updateTable('personal_data_keys')
        .set({ wrapped_key: rewrapped_key })
        .where('key_id', '=', row.key_id)
        .where('wrapped_key', '=', row.wrapped_key)
        .executeTakeFirst();
      rewrapped += Number(numUpdatedRows);
    }
  }
}
