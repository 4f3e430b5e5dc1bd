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

const CACHE_TTL_MS = 30_000;

/**
 * `X-Partner-Key` authentication. Keys are looked up by hash; a found key is cached briefly, so a
 * revoked key stops working within CACHE_TTL_MS.
 */
export function partnerKeyAuthentication(db: Kysely<Database>) {
  const cache = new Map<string, { partner: AuthenticatedPartner; expires: number }>();
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
    const hash = hashApiKey(key);
    const cached = cache.get(hash);
    if (cached && cached.expires > Date.now()) {
      request.partner = cached.partner;
      return;
    }
    const row = await db
      .selectFrom('partner_api_keys')
      .select(['id', 'partner_id'])
      .where('key_hash', '=', hash)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    if (!row) return sendProblem(reply, request, 401, 'invalid_api_key', 'The partner key is not valid.');
    request.partner = { id: row.partner_id, keyId: row.id };
    cache.set(hash, { partner: request.partner, expires: Date.now() + CACHE_TTL_MS });
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
