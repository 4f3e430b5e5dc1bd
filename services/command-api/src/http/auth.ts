import type { CommandContext, Database } from '@leadline/runtime';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { hashApiKey, isPlausibleApiKey } from '../partners/api-keys';
import type { PartnerKeyCache } from './partner-key-cache';
import { sendProblem } from './problem';

export interface AuthenticatedPartner {
  id: string;
  keyId: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    partner: AuthenticatedPartner;
  }
}

/** Each instance writes a key's last use at most this often: a minute's precision, not a write per request. */
const LAST_USE_PRECISION_MS = 60_000;

const FAILURE_WINDOW_MS = 60_000;

/**
 * Failed authentications per client address in a fixed one-minute window, in memory: a client that
 * guesses keys is refused before any database lookup. Good for one process; behind a proxy,
 * `request.ip` is the proxy unless fastify's `trustProxy` is set.
 */
function failureLimiter(maxPerMinute: number) {
  const failures = new Map<string, { count: number; resetAt: number }>();
  return {
    retryAfterSeconds(address: string, now: number): number | undefined {
      const entry = failures.get(address);
      if (!entry || entry.resetAt <= now) return undefined;
      return entry.count >= maxPerMinute ? Math.ceil((entry.resetAt - now) / 1000) : undefined;
    },
    record(address: string, now: number) {
      const entry = failures.get(address);
      if (!entry || entry.resetAt <= now) {
        // Old windows go when a new one starts somewhere, so the map stays bounded by live clients.
        if (failures.size > 10_000)
          for (const [key, old] of failures) if (old.resetAt <= now) failures.delete(key);
        failures.set(address, { count: 1, resetAt: now + FAILURE_WINDOW_MS });
      } else entry.count++;
    },
  };
}

/**
 * `X-Partner-Key` authentication. Keys are looked up by hash (one primary-key read), or found in
 * `keys`, a cache that forgets a revoked key when the revocation is announced and is not trusted
 * while it cannot hear announcements (see partner-key-cache.ts): a revoked key is refused by every
 * instance within a second. A malformed key (a wrong checksum) is refused without a lookup, and a
 * client address with too many failures a minute gets a 429 before any.
 */
export function partnerKeyAuthentication(
  db: Kysely<Database>,
  options: { failuresPerMinute?: number; keys?: PartnerKeyCache | undefined } = {},
) {
  const limiter = failureLimiter(options.failuresPerMinute ?? 30);
  const lastRecorded = new Map<string, number>();
  function recordUse(keyId: string, request: FastifyRequest) {
    const now = Date.now();
    if (now - (lastRecorded.get(keyId) ?? 0) < LAST_USE_PRECISION_MS) return;
    lastRecorded.set(keyId, now);
    // Off the request's path: a failed bookkeeping write must not fail the request.
    void db
      .updateTable('partner_api_keys')
      .set({ last_used_at: new Date(now) })
      .where('id', '=', keyId)
      .execute()
      .catch((error: unknown) => request.log.warn({ err: error }, "could not record the key's last use"));
  }
  const lookup = (keyHash: string) =>
    db
      .selectFrom('partner_api_keys')
      .select(['id', 'partner_id'])
      .where('key_hash', '=', keyHash)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
  const refuse = (
    code: string,
    detail: string,
    request: FastifyRequest,
    reply: FastifyReply,
    now: number,
  ) => {
    limiter.record(request.ip, now);
    return sendProblem(reply, request, 401, code, detail);
  };
  // Nothing is made per request that a request with a cached key does not use: the lookup and the
  // refusal are built once (every closure costs an allocation, and a name under tsx).
  return async function authenticate(request: FastifyRequest, reply: FastifyReply) {
    const now = Date.now();
    const retryAfter = limiter.retryAfterSeconds(request.ip, now);
    if (retryAfter !== undefined) {
      reply.header('retry-after', String(retryAfter));
      return sendProblem(
        reply,
        request,
        429,
        'too_many_failed_authentications',
        'Too many requests with an invalid or missing partner key from this address; retry later.',
      );
    }
    const key = request.headers['x-partner-key'];
    if (typeof key !== 'string' || key.length === 0) {
      return refuse(
        'missing_api_key',
        'Send your partner key in the X-Partner-Key header.',
        request,
        reply,
        now,
      );
    }
    if (!isPlausibleApiKey(key))
      return refuse('invalid_api_key', 'The partner key is not valid.', request, reply, now);
    const keyHash = hashApiKey(key);
    const row = await (options.keys ? options.keys.find(keyHash, lookup) : lookup(keyHash));
    if (!row) return refuse('invalid_api_key', 'The partner key is not valid.', request, reply, now);
    request.partner = { id: row.partner_id, keyId: row.id };
    recordUse(row.id, request);
  };
}

/**
 * The command context of an authenticated request: its events are attributed to the partner's key, or
 * to the embedded dashboard's user when an embed token authenticated it.
 */
export function commandContext(request: FastifyRequest): CommandContext {
  const { embed } = request;
  return {
    partnerId: request.partner.id,
    actor: embed
      ? { kind: 'embed_user', user_name: embed.userName ?? '', user_role: embed.role }
      : { kind: 'partner_key', partner_id: request.partner.id, key_id: request.partner.keyId },
    correlationId: request.id,
  };
}
