import { createHash, randomBytes } from 'node:crypto';

const KEY_PREFIX = 'llk_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function base62(bytes: Buffer, length: number): string {
  let value = BigInt(`0x${bytes.toString('hex')}`);
  let out = '';
  while (out.length < length) {
    out = BASE62[Number(value % 62n)] + out;
    value /= 62n;
  }
  return out;
}

/**
 * Six base62 digits of the first four bytes of the body's SHA-256 (what `base62` makes of them), in
 * plain numbers: a 32-bit value needs no BigInt, and every request checks one.
 */
function checksumOf(body: string): string {
  let value = createHash('sha256').update(body).digest().readUInt32BE(0);
  let out = '';
  for (let i = 0; i < 6; i++) {
    out = BASE62[value % 62] + out;
    value = Math.floor(value / 62);
  }
  return out;
}

/**
 * Partner keys look like `llk_<32 random base62><6 checksum>`: the prefix lets secret scanners find
 * leaked keys, the checksum lets them (and us) tell a real key from a typo without a lookup.
 */
export function generateApiKey(): string {
  const body = KEY_PREFIX + base62(randomBytes(24), 32);
  return body + checksumOf(body);
}

export function hasValidChecksum(key: string): boolean {
  if (!key.startsWith(KEY_PREFIX) || key.length !== KEY_PREFIX.length + 38) return false;
  return checksumOf(key.slice(0, -6)) === key.slice(-6);
}

/**
 * Whether a key is worth a lookup: one of ours (`llk_`) must carry its checksum; any other key (a
 * development key set through PARTNER_API_KEY, at least 16 characters) must at least look like one.
 */
export function isPlausibleApiKey(key: string): boolean {
  if (key.startsWith(KEY_PREFIX)) return hasValidChecksum(key);
  return key.length >= 16 && key.length <= 256 && /^[\x20-\x7e]+$/.test(key);
}

/** Keys are stored only as this hash; they have 190 bits of entropy, so a fast hash is enough. */
export const hashApiKey = (key: string) => createHash('sha256').update(key).digest('hex');

/** What the key list shows so an operator can tell keys apart: never enough to use one. */
export const displayPrefix = (key: string) => key.slice(0, KEY_PREFIX.length + 6);
