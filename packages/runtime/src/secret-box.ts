import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';

/**
 * Encrypts webhook signing secrets at rest (on the log and in the read model) with AES-256-GCM.
 * Format: `v1.<iv>.<tag>.<ciphertext>`, each part base64url; the version names the key generation so a
 * key rotation can add `v2` beside it.
 */
export interface SecretBox {
  seal(plaintext: string): string;
  open(sealed: string): string;
}

export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error('The webhook encryption key must be 32 bytes');
  return {
    seal(plaintext) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      const parts = [iv, cipher.getAuthTag(), ciphertext].map((part) => part.toString('base64url'));
      return ['v1', ...parts].join('.');
    },
    open(sealed) {
      const [version, iv, tag, ciphertext] = sealed.split('.');
      if (version !== 'v1' || iv === undefined || tag === undefined || ciphertext === undefined) {
        throw new Error('Not a sealed secret');
      }
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([
        decipher.update(Buffer.from(ciphertext, 'base64url')),
        decipher.final(),
      ]).toString('utf8');
    },
  };
}

/** 32 bytes as 64 hex digits or as base64 (standard or url-safe). */
const keyValue = z.string().transform((value, context) => {
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

/** Settings of every process that seals or opens webhook secrets; spread into a service's config. */
export const webhookSecretConfig = {
  NODE_ENV: z.string().default('development'),
  WEBHOOK_ENCRYPTION_KEY: keyValue.optional(),
};

/**
 * Resolves the key after parsing (use as `.transform(withWebhookEncryptionKey)` on a service's config
 * schema): required when NODE_ENV is production, the development key otherwise.
 */
export function withWebhookEncryptionKey<
  C extends { NODE_ENV: string; WEBHOOK_ENCRYPTION_KEY?: Buffer | undefined },
>(
  config: C,
  context: z.RefinementCtx,
): Omit<C, 'WEBHOOK_ENCRYPTION_KEY'> & { WEBHOOK_ENCRYPTION_KEY: Buffer } {
  if (config.WEBHOOK_ENCRYPTION_KEY)
    return { ...config, WEBHOOK_ENCRYPTION_KEY: config.WEBHOOK_ENCRYPTION_KEY };
  if (config.NODE_ENV === 'production') {
    context.addIssue({
      code: 'custom',
      path: ['WEBHOOK_ENCRYPTION_KEY'],
      message: 'Required in production: 32 random bytes, as hex or base64 (openssl rand -base64 32).',
    });
    return z.NEVER;
  }
  return { ...config, WEBHOOK_ENCRYPTION_KEY: DEVELOPMENT_WEBHOOK_KEY };
}
