import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock';

/**
 * Signed, expiring URLs for stored documents, served by the API without a partner key (a partner
 * backend hands them on). The signing key is derived from the webhook encryption key, so every
 * service that already holds that key can sign without another secret.
 */
export interface DocumentLinks {
  url(documentId: string): string;
  verify(documentId: string, expires: string, signature: string): boolean;
}

export function documentLinkKey(encryptionKey: Buffer): Buffer {
  return createHmac('sha256', encryptionKey).update('leadline document links v1').digest();
}

export function createDocumentLinks(options: {
  publicUrl: string;
  key: Buffer;
  clock: Clock;
  /** How long a URL stays valid after it is made. */
  ttlSeconds?: number;
}): DocumentLinks {
  const ttl = options.ttlSeconds ?? 7 * 24 * 3600;
  const sign = (documentId: string, expires: string) =>
    createHmac('sha256', options.key).update(`${documentId}.${expires}`).digest();
  return {
    url(documentId) {
      // Rounded up to the hour, so a URL read twice in a row is the same URL.
      const now = Math.floor(options.clock.now().getTime() / 1000);
      const expires = String(Math.ceil((now + ttl) / 3600) * 3600);
      const signature = sign(documentId, expires).toString('hex');
      return `${options.publicUrl}/v1/documents/${encodeURIComponent(documentId)}?expires=${expires}&signature=${signature}`;
    },
    verify(documentId, expires, signature) {
      if (!/^\d{1,12}$/.test(expires) || !/^[0-9a-f]{64}$/.test(signature)) return false;
      if (Number(expires) * 1000 < options.clock.now().getTime()) return false;
      return timingSafeEqual(sign(documentId, expires), Buffer.from(signature, 'hex'));
    },
  };
}
