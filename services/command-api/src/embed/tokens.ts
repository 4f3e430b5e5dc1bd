import { randomBytes } from 'node:crypto';
import type { Database } from '@leadline/runtime';
import type { Kysely, Selectable } from 'kysely';
import { hashApiKey } from '../partners/api-keys';

export type EmbedTokenRow = Selectable<Database['embed_tokens']>;
export const embedViews = ['full', 'conversations', 'leads', 'sequences', 'settings'] as const;
export type EmbedView = (typeof embedViews)[number];

const TOKEN_PREFIX = 'lle_';

/** `lle_` + 256 random bits: the prefix lets secret scanners find leaked tokens. */
export const generateEmbedToken = () => TOKEN_PREFIX + randomBytes(32).toString('base64url');

/** Tokens are stored only as this hash (the same SHA-256 as partner keys: both are high-entropy). */
export const hashEmbedToken = hashApiKey;

/** A token that is known, not revoked, not expired, and whose account is still active. */
export async function findLiveToken(db: Kysely<Database>, token: string, now: Date) {
  if (!token.startsWith(TOKEN_PREFIX)) return undefined;
  return db
    .selectFrom('embed_tokens')
    .innerJoin('accounts', 'accounts.id', 'embed_tokens.account_id')
    .selectAll('embed_tokens')
    .where('embed_tokens.token_hash', '=', hashEmbedToken(token))
    .where('embed_tokens.revoked_at', 'is', null)
    .where('embed_tokens.expires_at', '>', now)
    .where('accounts.status', '=', 'active')
    .executeTakeFirst();
}

/** Revokes every live token of the account; answers how many. */
export async function revokeEmbedTokens(db: Kysely<Database>, accountId: string, now: Date) {
  const result = await db
    .updateTable('embed_tokens')
    .set({ revoked_at: now })
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
