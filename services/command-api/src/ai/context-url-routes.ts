import { contextLimits, pageFetchEvents } from '@leadline/domain';
import { conflict, DomainError, fetchPage, notFound, type Database } from '@leadline/runtime';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Kysely, Selectable } from 'kysely';
import { executeOnAccount, requireAccount } from '../accounts/account-stream';
import { accountParams } from '../accounts/schemas';
import type { AppDeps } from '../app-deps';
import {
  contextDeletedResponse,
  contextUrlBody,
  contextUrlListResponse,
  contextUrlParams,
  contextUrlResponse,
} from './schemas';

const tags = ['AI configuration'];

type UrlRow = Selectable<Database['context_urls']>;
const toUrlResponse = (row: UrlRow) => ({
  id: row.id,
  url: row.url,
  title: row.title,
  last_scraped_at: row.last_scraped_at?.toISOString() ?? null,
  status: row.last_error ? ('failing' as const) : ('ok' as const),
  last_error: row.last_error,
  content_length: row.content?.length ?? 0,
});

/** The same page however it is spelt: host case, default port, an empty path (`new URL().href`). */
const samePage = (a: string, b: string) =>
  URL.canParse(a) && URL.canParse(b) && new URL(a).href === new URL(b).href;

/** A page the account already has is a 409: one page given twice would be in the AI's context twice. */
async function refuseKnownUrl(db: Kysely<Database>, accountId: string, url: string) {
  const rows = await db
    .selectFrom('context_urls')
    .select('url')
    .where('account_id', '=', accountId)
    .execute();
  if (rows.some((row) => samePage(row.url, url))) {
    throw conflict('context_url_exists', 'The account already has this context URL.');
  }
}

/** Context pages: fetched now and again on a schedule, their text given to the AI as company context. */
export const contextUrlRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const { db, commands, newId } = deps;
  app.post(
    '/accounts/:id/context/urls',
    {
      schema: {
        operationId: 'createContextUrl',
        tags,
        summary: 'Add a context URL',
        description: `The page is fetched now (through the SSRF guard; at most 2 MB and 10 s, HTML or plain text), its main text extracted and its \`<title>\` kept; a page that cannot be fetched is a 422 \`context_url_unreachable\` and nothing is stored. Pages are fetched again on a schedule with conditional requests. At most ${contextLimits.urlsPerAccount} URLs per account (409 \`context_url_limit_reached\`); a URL the account already has (the same page, however its host is cased or its default port written) is a 409 \`context_url_exists\`.`,
        params: accountParams,
        body: contextUrlBody,
        response: { 201: contextUrlResponse },
      },
    },
    async (request, reply) => {
      const account = await requireAccount(db, request, request.params.id);
      const count = await db
        .selectFrom('context_urls')
        .select((eb) => eb.fn.countAll<string>().as('count'))
        .where('account_id', '=', account.id)
        .executeTakeFirstOrThrow();
      if (Number(count.count) >= contextLimits.urlsPerAccount) {
        throw conflict(
          'context_url_limit_reached',
          `At most ${contextLimits.urlsPerAccount} context URLs per account.`,
        );
      }
      await refuseKnownUrl(db, account.id, request.body.url);
      // The remote call happens before the account's lock is taken, never inside it.
      const fetched = await fetchPage(request.body.url, { allowPrivate: deps.allowPrivateTargets ?? false });
      if (fetched.kind !== 'fetched') {
        throw new DomainError(
          422,
          'context_url_unreachable',
          `The page could not be used: ${fetched.kind === 'failed' ? fetched.error : 'no content'}.`,
        );
      }
      const urlId = newId();
      await executeOnAccount(commands, request, request.params.id, async (trx, locked) => {
        const again = await trx
          .selectFrom('context_urls')
          .select((eb) => eb.fn.countAll<string>().as('count'))
          .where('account_id', '=', locked.id)
          .executeTakeFirstOrThrow();
        if (Number(again.count) >= contextLimits.urlsPerAccount) {
          throw conflict(
            'context_url_limit_reached',
            `At most ${contextLimits.urlsPerAccount} context URLs per account.`,
          );
        }
        // Again under the account's lock: the same URL posted twice at once is stored once.
        await refuseKnownUrl(trx, locked.id, request.body.url);
        return {
          events: [
            { type: 'context_url.added', data: { url_id: urlId, url: request.body.url } },
            ...pageFetchEvents(urlId, fetched),
          ],
          result: undefined,
        };
      });
      const row = await db
        .selectFrom('context_urls')
        .selectAll()
        .where('id', '=', urlId)
        .executeTakeFirstOrThrow();
      return reply.status(201).send(toUrlResponse(row));
    },
  );

  app.get(
    '/accounts/:id/context/urls',
    {
      schema: {
        operationId: 'listContextUrls',
        tags,
        summary: 'List context URLs',
        description:
          'A page whose last fetch failed is `failing` with `last_error`; its last good content is still used.',
        params: accountParams,
        response: { 200: contextUrlListResponse },
      },
    },
    async (request) => {
      const account = await requireAccount(db, request, request.params.id);
      const rows = await db
        .selectFrom('context_urls')
        .selectAll()
        .where('account_id', '=', account.id)
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      return { urls: rows.map(toUrlResponse) };
    },
  );

  app.delete(
    '/accounts/:id/context/urls/:url_id',
    {
      schema: {
        operationId: 'deleteContextUrl',
        tags,
        summary: 'Delete a context URL',
        description:
          'The page is no longer fetched, and the AI no longer sees its text from its next answer on.',
        params: contextUrlParams,
        response: { 200: contextDeletedResponse },
      },
    },
    async (request) => {
      await executeOnAccount(commands, request, request.params.id, async (trx, account) => {
        const row = await trx
          .selectFrom('context_urls')
          .select('id')
          .where('account_id', '=', account.id)
          .where('id', '=', request.params.url_id)
          .executeTakeFirst();
        if (!row) throw notFound('context_url');
        return { events: [{ type: 'context_url.deleted', data: { url_id: row.id } }], result: undefined };
      });
      return { success: true as const, deleted: true as const };
    },
  );
};
