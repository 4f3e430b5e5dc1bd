import { notFound } from '@leadline/runtime';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppDeps } from '../app-deps';

/** Types a browser may render inline from our origin; anything else is downloaded as bytes. */
const inlineTypes = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp', 'application/pdf']);

/**
 * A collected document behind its signed, expiring URL (the `file_url` of checklist items and
 * webhooks): no partner key, the signature is the credential. The stored type was sniffed from the
 * bytes; it is served only if it is one a browser cannot run script from, and never sniffed again.
 */
export const documentRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  app.get(
    '/documents/:document_id',
    {
      schema: {
        operationId: 'getDocument',
        tags: ['Checklist'],
        summary: 'Download a collected document',
        description:
          'The `file_url` of a collected document. Signed and expiring: no `X-Partner-Key` is needed, and an expired or altered URL is a 404.',
        security: [],
        params: z.object({ document_id: z.string().max(100) }),
        querystring: z.object({ expires: z.string().max(20), signature: z.string().max(128) }),
      },
    },
    async (request, reply) => {
      const { document_id } = request.params;
      if (!deps.documentLinks.verify(document_id, request.query.expires, request.query.signature)) {
        throw notFound('document');
      }
      const row = await deps.db
        .selectFrom('documents')
        .select(['content_type', 'file_size'])
        .where('id', '=', document_id)
        .executeTakeFirst();
      const bytes = row && (await deps.documents.get(document_id));
      if (!row || !bytes) throw notFound('document');
      const inline = inlineTypes.has(row.content_type);
      return reply
        .header('content-type', inline ? row.content_type : 'application/octet-stream')
        .header('content-disposition', inline ? 'inline' : 'attachment')
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "default-src 'none'; sandbox")
        .header('cache-control', 'private, max-age=3600')
        .send(bytes);
    },
  );
};
