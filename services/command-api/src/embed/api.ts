import { DomainError, notFound, unavailable } from '@leadline/runtime';
import type { ServerResponse } from 'node:http';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { requireAccount } from '../accounts/account-stream';
import { accountParams } from '../accounts/schemas';
import type { AppDeps } from '../app-deps';
import { conversationRoutes } from '../conversations/routes';
import { leadRoutes } from '../leads/routes';
import { requirementRoutes } from '../requirements/routes';
import { sequenceRoutes } from '../sequences/routes';
import { aiRoutes } from '../ai/routes';
import { complianceRoutes } from '../compliance/routes';
import type { EmbedSession } from './auth';
import { watchAccount, type AccountWatch } from './live';
import { embedCapabilities, embedRoleAllows } from './permissions';
import { embedViews, isTokenLive } from './tokens';

export const EMBED_API_PREFIX = '/embed/api';
const HEARTBEAT_MS = 25_000;

const sessionResponse = z
  .object({
    account: z.object({
      id: z.string(),
      company_name: z.string(),
      logo_url: z.string().nullable(),
      accent_color: z.string().nullable(),
    }),
    user: z.object({ name: z.string().nullable(), role: z.enum(['owner', 'admin', 'member']) }),
    view: z.enum(embedViews),
    parent_origin: z.string().nullable(),
    expires_at: z.string(),
    capabilities: z.record(z.string(), z.boolean()),
  })
  .meta({ id: 'EmbedSession' });

const session = (request: FastifyRequest): EmbedSession => request.embed!;

/**
 * The dashboard's API: the partner API's own lead, requirement, sequence, conversation, AI settings
 * and carrier registration routes (same handlers, queries and deciders), confined to the token's account and to what
 * its role may do, plus the session and its live stream. Its scope's edge checks (`registerEdgeChecks`)
 * authenticate the embed token instead of the partner key.
 */
export const embedApiRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const { db } = deps;
  app.addHook('preValidation', async (request) => {
    const embed = session(request);
    const { id } = request.params as { id?: string };
    // Another account of the same partner is as invisible as another partner's.
    if (id !== undefined && id !== embed.accountId) throw notFound('account');
    const route = (request.routeOptions.url ?? '').slice(EMBED_API_PREFIX.length);
    if (!embedRoleAllows(embed.role, request.method, route, request.body)) {
      throw new DomainError(403, 'embed_role_forbidden', `The ${embed.role} role may not do this.`);
    }
    // Manual messages carry the embedded user's name, whatever the page sends.
    if (request.method === 'POST' && route === '/accounts/:id/conversations/:phone/messages') {
      const body = request.body as Record<string, unknown> | null;
      if (body && typeof body === 'object') {
        delete body.sender_name;
        if (embed.userName) body.sender_name = embed.userName;
      }
    }
  });

  app.get(
    '/session',
    { schema: { operationId: 'getEmbedSession', response: { 200: sessionResponse } } },
    async (request) => {
      const embed = session(request);
      const account = await requireAccount(db, request, embed.accountId);
      return {
        account: {
          id: account.id,
          company_name: account.company_name,
          logo_url: account.logo_url,
          accent_color: account.accent_color,
        },
        user: { name: embed.userName, role: embed.role },
        view: embed.view,
        parent_origin: embed.parentOrigin,
        expires_at: embed.expiresAt.toISOString(),
        capabilities: embedCapabilities(embed.role),
      };
    },
  );

  // Open streams never end by themselves: closing the app ends them, or it would wait on them forever.
  const streams = new Set<ServerResponse>();
  app.addHook('preClose', async () => {
    for (const stream of streams) stream.end();
  });

  app.get(
    '/accounts/:id/events',
    { schema: { operationId: 'streamEmbedEvents', params: accountParams } },
    async (request, reply) => {
      const embed = session(request);
      const { progress } = deps;
      if (!progress) throw unavailable('live_updates_unavailable', 'Live updates are not available.');
      const lastEventId = request.headers['last-event-id'];
      reply.hijack();
      const raw = reply.raw;
      raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      const send = (event: string, id: string, data: unknown) =>
        raw.write(`id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      let watch: AccountWatch | undefined;
      let closed = false;
      // The token's expiry ends the stream too; the page reconnects with its refreshed token.
      const expiry = setTimeout(
        () => raw.end(),
        Math.max(0, embed.expiresAt.getTime() - deps.clock.now().getTime()),
      );
      const heartbeat = setInterval(() => raw.write(': keep-alive\n\n'), HEARTBEAT_MS);
      streams.add(raw);
      raw.on('close', () => {
        closed = true;
        streams.delete(raw);
        clearTimeout(expiry);
        clearInterval(heartbeat);
        watch?.stop();
      });
      try {
        watch = await watchAccount(
          { db, progress },
          embed.accountId,
          async (changes, position) => {
            // A stream outlives no revocation: each change is sent only while its token still works.
            if (await isTokenLive(db, embed.tokenId, deps.clock.now())) send('change', position, changes);
            else raw.end();
          },
          (error) => request.log.warn({ err: error }, 'live update failed'),
        );
      } catch (error) {
        request.log.error({ err: error }, 'live updates could not start');
        raw.end();
        return;
      }
      if (closed) return watch.stop();
      raw.write('retry: 2000\n\n');
      if (typeof lastEventId === 'string' && lastEventId !== watch.position) {
        // Resumed after a gap: what changed in between is unknown, so the page refetches what it shows.
        send('change', watch.position, {
          conversations: [],
          leads: [],
          checklist_completed: [],
          resync: true,
        });
      } else {
        send('ready', watch.position, {});
      }
    },
  );

  await app.register(leadRoutes, deps);
  await app.register(requirementRoutes, deps);
  await app.register(conversationRoutes, deps);
  await app.register(sequenceRoutes, deps);
  await app.register(aiRoutes, deps);
  await app.register(complianceRoutes, deps);
};
