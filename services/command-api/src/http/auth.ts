import type { CommandContext, Database } from '@leadline/runtime';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { hashApiKey } from '../partners/api-keys';
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

/**
 * `X-Partner-Key` authentication. Keys are looked up by hash on every request (one primary-key read),
 * with no cache, so a revoked key is refused by every instance from its next request on.
 */
export function partnerKeyAuthentication(db: Kysely<Database>) {
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
  return async function authenticate(request: FastifyRequest, reply: FastifyReply) {
    const key = request.headers['x-partner-key'];
    if (typeof key !== 'string' || key.length === 0) {
      return sendProblem(
        reply,
        request,
        401,
        'missing_api_key',
        'Send your partner key in the X-Partner-Key header.',
      );
    }
    const row = await db
      .selectFrom('partner_api_keys')
      .select(['id', 'partner_id'])
      .where('key_hash', '=', hashApiKey(key))
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    if (!row) return sendProblem(reply, request, 401, 'invalid_api_key', 'The partner key is not valid.');
    request.partner = { id: row.partner_id, keyId: row.id };
    recordUse(row.id, request);
  };
}

/** The command context of an authenticated request: its events are attributed to the partner's key. */
export function commandContext(request: FastifyRequest): CommandContext {
  return {
    partnerId: request.partner.id,
    actor: { kind: 'partner_key', partner_id: request.partner.id, key_id: request.partner.keyId },
    correlationId: request.id,
  };
}
