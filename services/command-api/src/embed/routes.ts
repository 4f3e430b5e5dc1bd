import { conflict } from '@leadline/runtime';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { requireAccount } from '../accounts/account-stream';
import { accountParams } from '../accounts/schemas';
import type { AppDeps } from '../app-deps';
import { createEmbedTokenBody, embedTokenResponse, revokeEmbedTokensResponse } from './schemas';
import { generateEmbedToken, hashEmbedToken, revokeEmbedTokens } from './tokens';

const tags = ['Embed'];

/** The partner's side of the embed: minting and revoking the tokens the dashboard runs on. */
export const embedTokenRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const { db, clock, newId } = deps;
  const appUrl = deps.appUrl ?? deps.publicUrl;

  app.post(
    '/accounts/:id/embed-token',
    {
      schema: {
        operationId: 'createEmbedToken',
        tags,
        summary: 'Create an embed token',
        description:
          'A short-lived token for the embedded dashboard, scoped to this account, one role and one user ' +
          'name. Load `embed_url` in an iframe (100% wide, at least 500 px high, `allow="clipboard-write"`). ' +
          'Tokens are stored only hashed; a deactivated account gets a 409 `account_deactivated`, and ' +
          'deactivating an account revokes its tokens.',
        params: accountParams,
        body: createEmbedTokenBody,
        response: { 200: embedTokenResponse },
      },
    },
    async (request) => {
      const account = await requireAccount(db, request, request.params.id);
      if (account.status !== 'active') {
        throw conflict('account_deactivated', 'The account is deactivated; reactivate it to embed it.');
      }
      const { expires_in, view, user_name, user_role, parent_origin } = request.body;
      const token = generateEmbedToken();
      const now = clock.now();
      const expiresAt = new Date(now.getTime() + expires_in * 1000);
      await db
        .insertInto('embed_tokens')
        .values({
          id: newId(),
          token_hash: hashEmbedToken(token),
          partner_id: request.partner.id,
          account_id: account.id,
          user_name: user_name ?? null,
          user_role,
          view: view ?? 'full',
          parent_origin: parent_origin ?? null,
          created_at: now,
          expires_at: expiresAt,
        })
        .execute();
      // Kept relative to APP_URL's own path, for a dashboard served under a prefix.
      const url = new URL(`${appUrl.replace(/\/+$/, '')}/embed`);
      url.searchParams.set('token', token);
      if (view) url.searchParams.set('view', view);
      return { token, expires_at: expiresAt.toISOString(), embed_url: url.toString() };
    },
  );

  app.delete(
    '/accounts/:id/embed-tokens',
    {
      schema: {
        operationId: 'revokeEmbedTokens',
        tags,
        summary: "Revoke the account's embed tokens",
        description: 'Every live token of the account stops working at once; open dashboards show an error.',
        params: accountParams,
        response: { 200: revokeEmbedTokensResponse },
      },
    },
    async (request) => {
      const account = await requireAccount(db, request, request.params.id);
      return { success: true as const, revoked: await revokeEmbedTokens(db, account.id, clock.now()) };
    },
  );
};
