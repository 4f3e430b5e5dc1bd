import { teamMemberRoles } from '@leadline/events';
import { z } from 'zod';
import { count, timestamp } from '../http/fields';
import { embedViews } from './tokens';

export const EMBED_TOKEN_DEFAULT_SECONDS = 28_800;
export const EMBED_TOKEN_MAX_SECONDS = 86_400;

/** An origin exactly as browsers send it: scheme, host and port only, no path or trailing slash. */
const origin = z
  .string()
  .max(2048)
  .refine((value) => {
    try {
      const url = new URL(value);
      return (url.protocol === 'https:' || url.protocol === 'http:') && url.origin === value;
    } catch {
      return false;
    }
  }, 'Must be an origin such as https://app.example.com (scheme, host and port; no path).')
  .meta({ example: 'https://crm.example.com' });

export const createEmbedTokenBody = z
  .strictObject({
    expires_in: z
      .number()
      .int()
      .min(1)
      .max(EMBED_TOKEN_MAX_SECONDS)
      .default(EMBED_TOKEN_DEFAULT_SECONDS)
      .describe('Lifetime in seconds, 1 to 86400 (24 hours); 28800 (8 hours) by default.'),
    view: z.enum(embedViews).optional().describe('The view the dashboard opens; `full` by default.'),
    user_name: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .optional()
      .describe('Shown as the sender of manual messages sent from the embed.'),
    user_role: z
      .enum(teamMemberRoles)
      .default('admin')
      .describe(
        'member: read, send manual messages, change lead status, resume the AI. admin and owner: also ' +
          'import, edit and delete leads and manage checklist requirements and settings.',
      ),
    parent_origin: origin
      .optional()
      .describe(
        'The origin of the page that embeds the dashboard. When given, only that origin may frame it ' +
          '(Content-Security-Policy frame-ancestors), exchange messages with it and refresh its token.',
      ),
  })
  .meta({ id: 'EmbedTokenRequest' });

export const embedTokenResponse = z
  .object({
    token: z.string(),
    expires_at: timestamp(),
    embed_url: z.url().describe('`{app_url}/embed?token=…`, with `&view=` when a view was chosen.'),
  })
  .meta({ id: 'EmbedToken' });

export const revokeEmbedTokensResponse = z
  .object({ success: z.literal(true), revoked: count().describe('Tokens that were still live.') })
  .meta({ id: 'EmbedTokensRevoked' });
