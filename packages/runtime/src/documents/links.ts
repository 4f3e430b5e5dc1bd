import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { Clock } from '../clock';
import { keyListValue } from '../secret-box';

/**
 * Signed, expiring URLs for stored documents, served by the API without a partner key (a partner
 * backend hands them on). They have keys of their own, `DOCUMENT_LINK_KEYS`, rotated like the webhook
 * encryption keys: the newest signs, every listed key verifies, so a link handed out before a rotation
 * (a webhook's lives a week) opens until its key is taken off the list.
 */
export interface DocumentLinks {
  url(documentId: string): string;
  verify(documentId: string, expires: string, signature: string): boolean;
}

/**
 * Outside production missing keys fall back to a fixed development key, derived from a public
 * string: anyone can sign with it, hence refused in production.
 */
export const DEVELOPMENT_DOCUMENT_LINK_KEY = createHash('sha256')
  .update('leadline local development document link key')
  .digest();

/** Settings of every process that signs or verifies document links; spread into a service's config. */
export const documentLinkConfig = {
  NODE_ENV: z.string().default('development'),
  /** Comma-separated, newest first: the newest signs, all of them verify. */
  DOCUMENT_LINK_KEYS: keyListValue,
};

/**
 * The keys after parsing (call from a service's config `.transform`): required when NODE_ENV is
 * production, the development key stands in otherwise.
 */
export function documentLinkKeys(
  config: { NODE_ENV: string; DOCUMENT_LINK_KEYS: Buffer[] },
  context: z.RefinementCtx,
): Buffer[] {
  if (config.DOCUMENT_LINK_KEYS.length > 0) return config.DOCUMENT_LINK_KEYS;
  if (config.NODE_ENV === 'production') {
    context.addIssue({
      code: 'custom',
      path: ['DOCUMENT_LINK_KEYS'],
      message: 'Required in production: 32 random bytes, as hex or base64 (openssl rand -base64 32).',
    });
    return z.NEVER;
  }
  return [DEVELOPMENT_DOCUMENT_LINK_KEY];
}

export function createDocumentLinks(options: {
  publicUrl: string;
  /** Newest first: the newest signs, every one verifies. */
  keys: readonly Buffer[];
  clock: Clock;
  /** How long a URL stays valid after it is made. */
  ttlSeconds?: number;
}): DocumentLinks {
  const [newest] = options.keys;
  if (!newest) throw new Error('At least one document link key is needed');
  const ttl = options.ttlSeconds ?? 7 * 24 * 3600;
  const sign = (key: Buffer, documentId: string, expires: string) =>
    createHmac('sha256', key).update(`${documentId}.${expires}`).digest();
  return {
    url(documentId) {
      // Rounded up to the hour, so a URL read twice in a row is the same URL.
      const now = Math.floor(options.clock.now().getTime() / 1000);
      const expires = String(Math.ceil((now + ttl) / 3600) * 3600);
      const signature = sign(newest, documentId, expires).toString('hex');
      return `${options.publicUrl}/v1/documents/${encodeURIComponent(documentId)}?expires=${expires}&signature=${signature}`;
    },
    verify(documentId, expires, signature) {
      if (!/^\d{1,12}$/.test(expires) || !/^[0-9a-f]{64}$/.test(signature)) return false;
      if (Number(expires) * 1000 < options.clock.now().getTime()) return false;
      const given = Buffer.from(signature, 'hex');
      return options.keys.some((key) => timingSafeEqual(sign(key, documentId, expires), given));
    },
  };
}
