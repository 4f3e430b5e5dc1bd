import { createDecipheriv, createHash } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { replayLog, replayOptionsFromEnv, type LoggedEvent, type ReplayOptions } from './replay';

/**
 * An authorised operator's replay, written from the README's "Personal data on the log" alone: the
 * stock replay of `replay.ts`, then every `sealed:1:…` value opened with its data subject's key, read
 * from the `personal_data_keys` table and unwrapped with the master keys (PERSONAL_DATA_KEYS). A value
 * whose subject was erased reads as `erased`: its key is gone, so nothing else can be shown.
 */

/** `sealed:1:<key id>:<s|j>:<iv, tag and ciphertext, base64url>`. */
const SEALED = /^sealed:1:([A-Za-z0-9_-]+):([sj]):([A-Za-z0-9_-]+)$/;
export const ERASED = 'erased';

/** PERSONAL_DATA_KEYS: comma-separated, each 32 bytes as 64 hex digits or base64 (standard or url-safe). */
export function parseMasterKeys(value: string): Buffer[] {
  return value
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const key = /^[0-9a-fA-F]{64}$/.test(part)
        ? Buffer.from(part, 'hex')
        : Buffer.from(part, /[-_]/.test(part) ? 'base64url' : 'base64');
      if (key.length !== 32)
        throw new Error('Each of PERSONAL_DATA_KEYS must be 32 bytes, as hex or base64.');
      return key;
    });
}

/** What the services use when PERSONAL_DATA_KEYS is unset outside production (README). */
export const DEVELOPMENT_MASTER_KEY = createHash('sha256')
  .update('leadline local development personal data key')
  .digest();

/** A master key is named, in a wrapped key, by the first 6 bytes of its SHA-256, base64url. */
const masterKeyId = (key: Buffer) =>
  createHash('sha256').update(key).digest().subarray(0, 6).toString('base64url');

/** AES-256-GCM over `<iv 12 bytes><tag 16 bytes><ciphertext>`, bound to `associatedData`. */
function openGcm(key: Buffer, iv: Buffer, tag: Buffer, ciphertext: Buffer, associatedData: string) {
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAAD(Buffer.from(associatedData, 'utf8'));
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
}

interface KeyRow {
  key_id: string;
  account_id: string;
  wrapped_key: string | null;
}

/**
 * A subject key from its row: `v2.<master key id>.<iv>.<tag>.<ciphertext>` (base64url parts) under the
 * master key of that id, bound to `leadline.personal-data-key\0<account id>\0<key id>`; what it holds
 * is the subject key's 32 bytes as base64 text. Null: the subject was erased.
 */
function unwrapSubjectKey(row: KeyRow, masterKeys: ReadonlyMap<string, Buffer>): Buffer | null {
  if (row.wrapped_key === null) return null;
  const [version, masterId, ...parts] = row.wrapped_key.split('.');
  if (version !== 'v2' || parts.length !== 3) throw new Error(`Key ${row.key_id}: not a wrapped key`);
  const master = masterKeys.get(masterId!);
  if (!master)
    throw new Error(`Key ${row.key_id} is wrapped by master key ${masterId}, not in PERSONAL_DATA_KEYS`);
  const [iv, tag, ciphertext] = parts.map((part) => Buffer.from(part, 'base64url'));
  const associatedData = `leadline.personal-data-key\u0000${row.account_id}\u0000${row.key_id}`;
  return Buffer.from(openGcm(master, iv!, tag!, ciphertext!, associatedData), 'base64');
}

/** The subject keys by id, read once per replay (Null: erased). */
export function subjectKeyReader(pool: pg.Pool, masterKeys: readonly Buffer[]) {
  const byMasterId = new Map(masterKeys.map((key) => [masterKeyId(key), key]));
  const known = new Map<string, Buffer | null>();
  return async function keysOf(keyIds: readonly string[]): Promise<Map<string, Buffer | null>> {
    const missing = [...new Set(keyIds)].filter((keyId) => !known.has(keyId));
    if (missing.length > 0) {
      const { rows } = await pool.query<KeyRow>(
        'SELECT key_id, account_id, wrapped_key FROM personal_data_keys WHERE key_id = ANY($1)',
        [missing],
      );
      for (const row of rows) known.set(row.key_id, unwrapSubjectKey(row, byMasterId));
    }
    return known;
  };
}

type Json = unknown;
/**
 * Every string of the event with the place it sits: dot-separated from the envelope's root, `[]`
 * after an array's name in place of a position, and `*` in place of a key of a lead's free-form
 * `metadata` (the place the README names as the associated data's path).
 */
function mapStrings(node: Json, path: string, map: (value: string, path: string) => Json): Json {
  if (typeof node === 'string') return map(node, path);
  if (Array.isArray(node)) return node.map((element) => mapStrings(element, `${path}[]`, map));
  if (node === null || typeof node !== 'object') return node;
  const freeForm = path.endsWith('.metadata');
  return Object.fromEntries(
    Object.entries(node).map(([key, value]) => [
      key,
      mapStrings(value, path === '' ? key : `${path}.${freeForm ? '*' : key}`, map),
    ]),
  );
}

/** The event with every sealed value opened (`erased` where its subject's key was destroyed). */
export async function openEvent(
  event: LoggedEvent,
  keysOf: (keyIds: readonly string[]) => Promise<Map<string, Buffer | null>>,
): Promise<LoggedEvent> {
  const keyIds: string[] = [];
  mapStrings(event, '', (value) => {
    const match = SEALED.exec(value);
    if (match) keyIds.push(match[1]!);
    return value;
  });
  if (keyIds.length === 0) return event;
  const keys = await keysOf(keyIds);
  return mapStrings(event, '', (value, path) => {
    const match = SEALED.exec(value);
    if (!match) return value;
    const [, keyId, kind, sealed] = match as unknown as [string, string, 's' | 'j', string];
    const key = keys.get(keyId);
    // A key this database never held: another deployment's log, or the wrong database. Not erased.
    if (key === undefined) throw new Error(`No personal-data key ${keyId} in this database`);
    if (key === null) return ERASED;
    const bytes = Buffer.from(sealed, 'base64url');
    const plaintext = openGcm(
      key,
      bytes.subarray(0, 12),
      bytes.subarray(12, 28),
      bytes.subarray(28),
      `leadline.personal\u0000${event.type}\u0000${event.id}\u0000${path}`,
    );
    return kind === 's' ? plaintext : (JSON.parse(plaintext) as Json);
  }) as LoggedEvent;
}

/** Replays the log as `replayLog` does, handing on each event with its personal values opened. */
export async function replayDecrypted(
  options: ReplayOptions & { databaseUrl: string; masterKeys: readonly Buffer[] },
  onEvent: (event: LoggedEvent, key: string) => void | Promise<void>,
): Promise<void> {
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: 1 });
  try {
    const keysOf = subjectKeyReader(pool, options.masterKeys);
    await replayLog(options, async (event, key) => onEvent(await openEvent(event, keysOf), key));
  } finally {
    await pool.end();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) throw new Error('Set DATABASE_URL to the database holding personal_data_keys.');
  const configured = process.env.PERSONAL_DATA_KEYS?.trim();
  if (!configured && process.env.NODE_ENV === 'production') throw new Error('Set PERSONAL_DATA_KEYS.');
  if (!configured) process.stderr.write('PERSONAL_DATA_KEYS unset: using the development master key.\n');
  await replayDecrypted(
    {
      ...replayOptionsFromEnv(process.env),
      databaseUrl,
      masterKeys: configured ? parseMasterKeys(configured) : [DEVELOPMENT_MASTER_KEY],
    },
    // One event per line, in log order per partition: ready for jq or a file.
    (event) => void process.stdout.write(`${JSON.stringify(event)}\n`),
  );
}
