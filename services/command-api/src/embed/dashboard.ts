import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppDeps } from '../app-deps';
import { sendProblem } from '../http/problem';
import { findLiveToken } from './tokens';

/** Where `npm start` and `npm test` build the dashboard (apps/dashboard). */
export const DEFAULT_DASHBOARD_DIR = fileURLToPath(
  new URL('../../../../apps/dashboard/dist', import.meta.url),
);

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

interface Asset {
  body: Buffer;
  type: string;
}

/** The built app, read once: a few small files, and their names change with their content. */
function loadDashboard(dir: string): { html: string; assets: Map<string, Asset> } | undefined {
  try {
    const html = readFileSync(join(dir, 'index.html'), 'utf8');
    const assets = new Map<string, Asset>();
    const assetsDir = join(dir, 'assets');
    for (const name of readdirSync(assetsDir)) {
      if (!statSync(join(assetsDir, name)).isFile()) continue;
      const type = CONTENT_TYPES[extname(name)] ?? 'application/octet-stream';
      assets.set(name, { body: readFileSync(join(assetsDir, name)), type });
    }
    return { html, assets };
  } catch {
    return undefined;
  }
}

/**
 * Who may frame the page: only the origin the token names; without one, any page holding a valid
 * token; nobody when the token is missing, unknown, expired or revoked, so that a page that fails to
 * open a session can never be framed (and dressed up) by anyone. Everything the page loads comes from
 * us, except the account's own logo.
 */
export function dashboardPolicy(framing: { parentOrigin: string | null } | undefined): string {
  const ancestors = framing === undefined ? "'none'" : (framing.parentOrigin ?? '*');
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "connect-src 'self'",
    'img-src * data:',
    "base-uri 'none'",
    "form-action 'none'",
    `frame-ancestors ${ancestors}`,
  ].join('; ');
}

/** Serves the embedded dashboard at /embed: the HTML never cached, hashed assets cached for a year. */
export const dashboardRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const dashboard = loadDashboard(deps.dashboardDir ?? DEFAULT_DASHBOARD_DIR);
  const common = { 'referrer-policy': 'no-referrer', 'x-content-type-options': 'nosniff' };

  app.get(
    '/embed',
    {
      schema: {
        hide: true,
        querystring: z.object({ token: z.string().max(512).optional(), view: z.string().max(32).optional() }),
      },
    },
    async (request, reply) => {
      if (!dashboard) {
        // The error page is as unframeable as a refused session: nobody may dress it up.
        reply.headers({ ...common, 'content-security-policy': dashboardPolicy(undefined) });
        return sendProblem(reply, request, 503, 'dashboard_not_built', 'The dashboard has not been built.');
      }
      const { token } = request.query;
      const row = token ? await findLiveToken(deps.db, token, deps.clock.now()) : undefined;
      return reply
        .headers({
          ...common,
          'cache-control': 'no-store',
          'content-security-policy': dashboardPolicy(row && { parentOrigin: row.parent_origin }),
        })
        .type('text/html; charset=utf-8')
        .send(dashboard.html);
    },
  );

  app.get(
    '/embed/assets/:name',
    { schema: { hide: true, params: z.object({ name: z.string() }) } },
    async (request, reply) => {
      const asset = dashboard?.assets.get(request.params.name);
      if (!asset) return sendProblem(reply, request, 404, 'asset_not_found', 'No such file.');
      return reply
        .headers({ ...common, 'cache-control': 'public, max-age=31536000, immutable' })
        .type(asset.type)
        .send(asset.body);
    },
  );
};
