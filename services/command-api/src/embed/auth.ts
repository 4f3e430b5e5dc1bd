import type { Clock, Database } from '@leadline/runtime';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { sendProblem } from '../http/problem';
import type { EmbedRole } from './permissions';
import { findLiveToken, type EmbedView } from './tokens';

export interface EmbedSession {
  tokenId: string;
  partnerId: string;
  accountId: string;
  role: EmbedRole;
  userName: string | null;
  view: EmbedView;
  parentOrigin: string | null;
  expiresAt: Date;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set on embed API requests: who the token speaks for. */
    embed?: EmbedSession;
  }
}

export function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer\s+(\S+)$/i.exec(header) : null;
  return match?.[1];
}

/**
 * Embed token authentication (`Authorization: Bearer`). Looked up on every request, uncached: a
 * revoked token or a deactivated account stops working at once. The partner key is never accepted here.
 */
export function embedTokenAuthentication(db: Kysely<Database>, clock: Clock) {
  return async function authenticate(request: FastifyRequest, reply: FastifyReply) {
    const token = bearerToken(request);
    if (!token) {
      return sendProblem(
        reply,
        request,
        401,
        'missing_embed_token',
        'Send the embed token as a Bearer token.',
      );
    }
    const row = await findLiveToken(db, token, clock.now());
    if (!row) {
      return sendProblem(
        reply,
        request,
        401,
        'invalid_embed_token',
        'The embed token is unknown, expired or revoked; ask for a new one.',
      );
    }
    request.partner = { id: row.partner_id, keyId: row.id };
    request.embed = {
      tokenId: row.id,
      partnerId: row.partner_id,
      accountId: row.account_id,
      role: row.user_role,
      userName: row.user_name,
      view: row.view,
      parentOrigin: row.parent_origin,
      expiresAt: row.expires_at,
    };
  };
}
