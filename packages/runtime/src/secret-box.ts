import { createCipheriv, createDecipheriv, createHash, createSecretKey, type KeyObject } from 'node:crypto';
import { z } from 'zod';
import { randomIv } from './random-bytes';

/** What a sealed webhook secret belongs to: it opens only for the same webhook of the same partner. */
export interface SecretBinding {
  partnerId: string;
  webhookId: string;
}

/** What a sealed field of an account belongs to (its tax id): it opens only for that account's. */
export interface AccountFieldBinding {
  partnerId: string;
  accountId: string;
  field: 'tax_id';
}

/** What a wrapped personal-data key belongs to: it unwraps only as that key of that account. */
export interface PersonalDataKeyBinding {
  accountId: string;
  personalDataKeyId: string;
}

type Binding = SecretBinding | AccountFieldBinding | PersonalDataKeyBinding;

/**
 * Encrypts webhook signing secrets (and an account's tax id) at rest, on the log and in the read
 * models, with AES-256-GCM under
 * one of several keys. Sealing uses the newest key and writes
 * `v2.<key id>.<iv>.<tag>.<ciphertext>` (base64url parts; the key id is a fingerprint of the key),
 * with the partner and webhook (or account and field) as associated data, so a ciphertext copied onto
 * another webhook or account does not open. `v1.<iv>.<tag>.<ciphertext>` (no key id, no associated data) is what the log held before
 * rotation existed; it still opens under any configured key, since the log is never rewritten.
 */
export interface SecretBox {
  seal(plaintext: string, binding: Binding): string;
  open(sealed: string, binding: Binding): string;
  /** Whether `sealed` is already under the newest key in the current format (nothing to re-seal). */
  isCurrent(sealed: string): boolean;
}

const keyIdOf = (key: Buffer) =>
  createHash('sha256').update(key).digest().subarray(0, 6).toString('base64url');
const associatedData = (binding: Binding) =>
  Buffer.from(
    'personalDataKeyId' in binding
      ? `leadline.personal-data-key\u0000${binding.accountId}\u0000${binding.personalDataKeyId}`
      : 'webhookId' in binding
        ? `leadline.webhook-secret\u0000${binding.partnerId}\u0000${binding.webhookId}`
        : `leadline.account-${binding.field}\u0000${binding.partnerId}\u0000${binding.accountId}`,
    'utf8',
  );

function decrypt(key: KeyObject, parts: string[], aad: Buffer | undefined): string {
  const [iv, tag, ciphertext] = parts.map((part) => Buffer.from(part, 'base64url'));
  const decipher = createDecipheriv('aes-256-gcm', key, iv!);
  if (aad) decipher.setAAD(aad);
  decipher.setAuthTag(tag!);
  return Buffer.concat([decipher.update(ciphertext!), decipher.final()]).toString('utf8');
}

/** `keys`: newest first; the newest seals, every one opens what it sealed. */
export function createSecretBox(keys: Buffer | readonly Buffer[]): SecretBox {
  const all = Array.isArray(keys) ? keys : [keys as Buffer];
  if (all.length === 0) throw new Error('At least one webhook encryption key is needed');
  if (all.some((key) => key.length !== 32)) throw new Error('A webhook encryption key must be 32 bytes');
  // KeyObjects made once: given raw bytes, node:crypto imports the key again on every call, which
  // cost more than wrapping or unwrapping a personal-data key (one of each per new data subject).
  const keyObjects = all.map((key) => createSecretKey(key));
  const newest = keyObjects[0]!;
  const newestId = keyIdOf(all[0]!);
  const byId = new Map(all.map((key, index) => [keyIdOf(key), keyObjects[index]!]));
  return {
    seal(plaintext, binding) {
      const iv = randomIv();
      const cipher = createCipheriv('aes-256-gcm', newest, iv);
      cipher.setAAD(associatedData(binding));
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      const parts = [iv, cipher.getAuthTag(), ciphertext].map((part) => part.toString('base64url'));
      return ['v2', newestId, ...parts].join('.');
    },
    open(sealed, binding) {
      const [version, ...rest] = sealed.split('.');
      if (version === 'v2' && rest.length === 4) {
        const key = byId.get(rest[0]!);
        if (!key) throw new Error('Sealed under a webhook encryption key that is not configured');
        return decrypt(key, rest.slice(1), associatedData(binding));
      }
      if (version === 'v1' && rest.length === 3) {
        for (const key of keyObjects) {
          try {
            return decrypt(key, rest, undefined);
          } catch {
            // Another key's ciphertext (or a tampered one): try the next key.
          }
        }
        throw new Error('No configured webhook encryption key opens this secret');
      }
      throw new Error('Not a sealed secret');
    },
    isCurrent: (sealed) => sealed.startsWith(`v2.${newestId}.`),
  };
}

/** 32 bytes as 64 hex digits or as base64 (standard or url-safe). */
export const keyValue = z.string().transform((value, context) => {
  const trimmed = value.trim();
  const bytes = /^[0-9a-fA-F]{64}$/.test(trimmed)
    ? Buffer.from(trimmed, 'hex')
    : Buffer.from(trimmed, /[-_]/.test(trimmed) ? 'base64url' : 'base64');
  if (bytes.length !== 32) {
    context.addIssue({ code: 'custom', message: 'Must be 32 bytes, as 64 hex digits or base64.' });
    return z.NEVER;
  }
  return bytes;
});

/**
 * Outside production a missing key falls back to a fixed development key, derived from a public
 * string: fine for a laptop and the tests, worthless as protection, hence refused in production.
 */
export const DEVELOPMENT_WEBHOOK_KEY = createHash('sha256')
  .update('leadline local development webhook key')
  .digest();

/** Comma-separated keys, newest first, each 32 bytes as `keyValue` reads them; none when unset. */
export const keyListValue = z
  .string()
  .optional()
  .transform((value, context) => {
    const parts = (value ?? '')
      .split(',')
      .map((part) => part.trim())
      .filter(Boolean);
    const keys: Buffer[] = [];
    for (const part of parts) {
      const parsed = keyValue.safeParse(part);
      if (!parsed.success) {
        context.addIssue({
          code: 'custom',
          message: 'Each key must be 32 bytes, as 64 hex digits or base64.',
        });
        return z.NEVER;
      }
      keys.push(parsed.data);
    }
    return keys;
  });

/** Settings of every process that seals or opens webhook secrets; spread into a service's config. */
export const webhookSecretConfig = {
  NODE_ENV: z.string().default('development'),
  /** Comma-separated, newest first: the newest seals, all of them open. */
  WEBHOOK_ENCRYPTION_KEYS: keyListValue,
  /** A single key, as before rotation existed; opened (and used to seal when it is the only one). */
  WEBHOOK_ENCRYPTION_KEY: keyValue.optional(),
};

/**
 * Resolves the keys after parsing (use as `.transform(withWebhookEncryptionKeys)` on a service's
 * config schema): WEBHOOK_ENCRYPTION_KEYS then WEBHOOK_ENCRYPTION_KEY, newest first; at least one is
 * required when NODE_ENV is production, the development key stands in otherwise.
 */
export function withWebhookEncryptionKeys<
  C extends {
    NODE_ENV: string;
    WEBHOOK_ENCRYPTION_KEYS: Buffer[];
    WEBHOOK_ENCRYPTION_KEY?: Buffer | undefined;
  },
>(
  config: C,
  context: z.RefinementCtx,
): Omit<C, 'WEBHOOK_ENCRYPTION_KEY' | 'WEBHOOK_ENCRYPTION_KEYS'> & { WEBHOOK_ENCRYPTION_KEYS: Buffer[] } {
  const { WEBHOOK_ENCRYPTION_KEY: single, WEBHOOK_ENCRYPTION_KEYS: listed, ...rest } = config;
  const keys = [...listed];
  if (single && !keys.some((key) => key.equals(single))) keys.push(single);
  if (keys.length > 0) return { ...rest, WEBHOOK_ENCRYPTION_KEYS: keys };
  if (config.NODE_ENV === 'production') {
    context.addIssue({
      code: 'custom',
      path: ['WEBHOOK_ENCRYPTION_KEYS'],
      message:
        'Required in production (or WEBHOOK_ENCRYPTION_KEY): 32 random bytes, as hex or base64 (openssl rand -base64 32).',
    });
    return z.NEVER;
  }
  return { ...rest, WEBHOOK_ENCRYPTION_KEYS: [DEVELOPMENT_WEBHOOK_KEY] };
}
