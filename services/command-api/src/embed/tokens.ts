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

/** Tokens that work: not revoked, not expired, and of an account that is still active. */
const liveTokens = (db: Kysely<Database>, now: Date) =>
  db
    .selectFrom('embed_tokens')
    .innerJoin('accounts', 'accounts.id', 'embed_tokens.account_id')
    .where('embed_tokens.revoked_at', 'is', null)
    .where('embed_tokens.expires_at', '>', now)
    .where('accounts.status', '=', 'active');

/** The shape every token we issue has: a token of any other shape is refused without a lookup. */
const TOKEN_SHAPE = /^lle_[A-Za-z0-9_-]{43}$/;

export async function findLiveToken(db: Kysely<Database>, token: string, now: Date) {
  if (!TOKEN_SHAPE.test(token)) return undefined;
  return liveTokens(db, now)
    .selectAll('embed_tokens')
    .where('embed_tokens.token_hash', '=', hashEmbedToken(token))
    .executeTakeFirst();
}

export async function isTokenLive(db: Kysely<Database>, tokenId: string, now: Date) {
  const row = await liveTokens(db, now)
    .select('embed_tokens.id')
    .where('embed_tokens.id', '=', tokenId)
    .executeTakeFirst();
  return row !== undefined;
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
