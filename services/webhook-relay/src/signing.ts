import { createHmac } from 'node:crypto';

/**
 * The headers that authenticate one attempt. `X-Service-Signature` is the spec's: hex HMAC-SHA256 of
 * the exact body bytes. It cannot tell a replay from a retry, so each attempt also carries its Unix
 * time and a second signature over `<timestamp>.<body>`; receivers that check it refuse stale copies.
 */
export function signatureHeaders(
  secret: string,
  body: string,
  timestampSeconds: number,
): Record<'x-service-signature' | 'x-service-timestamp' | 'x-service-timestamped-signature', string> {
  const hmac = (payload: string) => createHmac('sha256', secret).update(payload, 'utf8').digest('hex');
  const timestamp = String(timestampSeconds);
  return {
    'x-service-signature': hmac(body),
    'x-service-timestamp': timestamp,
    'x-service-timestamped-signature': hmac(`${timestamp}.${body}`),
  };
}
