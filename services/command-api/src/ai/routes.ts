import fastifyMultipart from '@fastify/multipart';
import { loadPromptInput } from '@leadline/decision-state';
import {
  composeSystemPrompt,
  contextLimits,
  defaultPromptSettings,
  normalizePhone,
  pageFetchEvents,
} from '@leadline/domain';
import { conflict, DomainError, fetchPage, notFound, type Database } from '@leadline/runtime';
import { validatorCompiler, type FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Kysely, Selectable } from 'kysely';
import { executeOnAccount, requireAccount, type AccountRow } from '../accounts/account-stream';
import { accountParams } from '../accounts/schemas';
import type { AppDeps } from '../app-deps';
import {
  contextDeletedResponse,
  contextFileListResponse,
  contextFileParams,
  contextFileResponse,
  contextFileUpload,
  contextUrlBody,
  contextUrlListResponse,
  contextUrlParams,
  contextUrlResponse,
  MAX_CONTEXT_FILE_BYTES,
  promptQuery,
  promptSettingsBody,
  promptSettingsResponse,
} from './schemas';

const tags = ['AI configuration'];

const badRequest = (code: string, message: string) => new DomainError(400, code, message);

async function promptSettingsOf(
  db: Kysely<Database>,
  account: Pick<AccountRow, 'id' | 'company_name'>,
  phone?: string,
) {
  const [settings, lead] = await Promise.all([
    db.selectFrom('ai_prompt_settings').selectAll().where('account_id', '=', account.id).executeTakeFirst(),
    phone
      ? db
          .selectFrom('leads')
          .selectAll()
          .where('account_id', '=', account.id)
          .where('phone', '=', phone)
          .executeTakeFirst()
      : Promise.resolve(undefined),
  ]);
  if (phone && !lead) throw notFound('lead');
  const input = await loadPromptInput(db, account, lead);
  const shown = settings ?? defaultPromptSettings;
  return {
    mode: shown.mode,
    role_persona: shown.role_persona,
    tone_voice: shown.tone_voice,
    response_style: shown.response_style,
    conversation_rules: shown.conversation_rules,
    special_instructions: shown.special_instructions,
    system_prompt: shown.system_prompt,
    composed_system_prompt: composeSystemPrompt(input),
    updated_at: settings?.updated_at.toISOString() ?? null,
  };
}

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

/** Text that is really text: valid UTF-8 without NUL or other control bytes (a binary renamed .txt is not). */
function asText(bytes: Buffer): string | undefined {
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  if (text.includes('\uFFFD')) return undefined;
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (/[\u0000-\u0008\u000E-\u001F]/.test(text)) return undefined;
  return text;
}

/**
 * The multipart parser's own errors (no boundary in the content type, no closing boundary, a part
 * header it cannot read) carry no HTTP status: they are the client's malformed body, a 400, not ours;
 * the plugin's own errors (too many parts, a file too large) keep their status.
 */
function refuseMalformedMultipart(error: unknown): never {
  const { statusCode, message } = error as { statusCode?: number; message?: string };
  if (statusCode === undefined) {
    throw badRequest(
      'malformed_multipart',
      `The multipart body could not be read: ${message ?? 'malformed'}.`,
    );
  }
  throw error;
}

export const aiRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const { db, commands, newId } = deps;
  await app.register(fastifyMultipart, {
    limits: { fileSize: MAX_CONTEXT_FILE_BYTES, files: 1, fields: 5, parts: 6 },
  });

  app.get(
    '/accounts/:id/settings/prompt',
    {
      schema: {
        operationId: 'getPromptSettings',
        tags,
        summary: 'Get the AI prompt settings',
        description:
          'The stored settings (defaults until first saved) and `composed_system_prompt`, the system prompt exactly as the model sees it. With `phone`, composed for that lead.',
        params: accountParams,
        querystring: promptQuery,
        response: { 200: promptSettingsResponse },
      },
    },
    async (request) => {
      const account = await requireAccount(db, request, request.params.id);
      const phone = request.query.phone === undefined ? undefined : normalizePhone(request.query.phone);
      if (request.query.phone !== undefined && !phone)
        throw badRequest('invalid_phone', 'Not a phone number.');
      return promptSettingsOf(db, account, phone);
    },
  );

  app.patch(
    '/accounts/:id/settings/prompt',
    {
      schema: {
        operationId: 'updatePromptSettings',
        tags,
        summary: 'Set the AI prompt',
        description:
          "`guided`: the five optional fields are combined into the prompt; a field left out keeps its stored guided value, null clears it. `advanced`: `system_prompt` replaces the composition. In both modes the channel rules, the checklist and the company context are appended. `{{company}}` is replaced by the account's company name. Answers the settings as GET does.",
        params: accountParams,
        body: promptSettingsBody,
        response: { 200: promptSettingsResponse },
      },
    },
    async (request) => {
      const body = request.body;
      await executeOnAccount(commands, request, request.params.id, async (trx, account) => {
        const stored = await trx
          .selectFrom('ai_prompt_settings')
          .selectAll()
          .where('account_id', '=', account.id)
          .executeTakeFirst();
        if (body.mode === 'advanced') {
          return {
            events: [
              { type: 'ai.prompt_updated', data: { mode: 'advanced', system_prompt: body.system_prompt } },
            ],
            result: undefined,
          };
        }
        const previous = stored?.mode === 'guided' ? stored : defaultPromptSettings;
        const pick = <
          K extends
            'role_persona' | 'tone_voice' | 'response_style' | 'conversation_rules' | 'special_instructions',
        >(
          field: K,
        ) => (body[field] === undefined ? previous[field] : body[field]);
        return {
          events: [
            {
              type: 'ai.prompt_updated',
              data: {
                mode: 'guided',
                role_persona: pick('role_persona'),
                tone_voice: pick('tone_voice'),
                response_style: pick('response_style'),
                conversation_rules: pick('conversation_rules'),
                special_instructions: pick('special_instructions'),
              },
            },
          ],
          result: undefined,
        };
      });
      const account = await requireAccount(db, request, request.params.id);
      return promptSettingsOf(db, account);
    },
  );

  app.post(
    '/accounts/:id/context/files',
    {
      schema: {
        operationId: 'uploadContextFile',
        tags,
        summary: 'Upload a context file',
        description: `Multipart form data with one part \`file\`: a \`.txt\` or \`.md\` file of UTF-8 text, at most 100 KB (413 \`file_too_large\` beyond; 400 \`unsupported_file_type\` for another extension or binary content). At most ${contextLimits.filesPerAccount} files per account (409 \`context_file_limit_reached\`). The text is given to the AI as company context.`,
        params: accountParams,
        consumes: ['multipart/form-data'],
        // For the contract only: the multipart plugin reads the file from the stream below, so there is
        // no parsed body to validate (the route's validator leaves the body to the handler).
        body: contextFileUpload,
        response: { 201: contextFileResponse },
      },
      validatorCompiler: (route) =>
        route.httpPart === 'body'
          ? () => true
          : validatorCompiler(route as unknown as Parameters<typeof validatorCompiler>[0]),
    },
    async (request, reply) => {
      if (!request.isMultipart())
        throw badRequest('multipart_required', 'Upload the file as multipart/form-data, field `file`.');
      const part = await request.file().catch(refuseMalformedMultipart);
      if (!part || part.fieldname !== 'file')
        throw badRequest('file_required', 'The multipart part `file` is required.');
      const extension = /\.([A-Za-z0-9]+)$/.exec(part.filename)?.[1]?.toLowerCase();
      let bytes: Buffer;
      try {
        bytes = await part.toBuffer();
      } catch (error) {
        if ((error as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE') {
          throw new DomainError(
            413,
            'file_too_large',
            `Context files are at most ${MAX_CONTEXT_FILE_BYTES / 1024} KB.`,
          );
        }
        return refuseMalformedMultipart(error);
      }
      if (extension !== 'txt' && extension !== 'md') {
        throw badRequest('unsupported_file_type', 'Context files are .txt or .md.');
      }
      const content = asText(bytes);
      if (content === undefined) throw badRequest('unsupported_file_type', 'The file is not UTF-8 text.');
      const fileId = newId();
      const name = part.filename.slice(0, 255);
      await executeOnAccount(commands, request, request.params.id, async (trx, account) => {
        const count = await trx
          .selectFrom('context_files')
          .select((eb) => eb.fn.countAll<string>().as('count'))
          .where('account_id', '=', account.id)
          .executeTakeFirstOrThrow();
        if (Number(count.count) >= contextLimits.filesPerAccount) {
          throw conflict(
            'context_file_limit_reached',
            `At most ${contextLimits.filesPerAccount} context files per account.`,
          );
        }
        return {
          events: [
            {
              type: 'context_file.uploaded',
              data: { file_id: fileId, name, file_type: extension, file_size: bytes.length, content },
            },
          ],
          result: undefined,
        };
      });
      const row = await db
        .selectFrom('context_files')
        .selectAll()
        .where('id', '=', fileId)
        .executeTakeFirstOrThrow();
      return reply.status(201).send({
        id: row.id,
        name: row.name,
        file_type: row.file_type,
        file_size: row.file_size,
        created_at: row.created_at.toISOString(),
      });
    },
  );

  app.get(
    '/accounts/:id/context/files',
    {
      schema: {
        operationId: 'listContextFiles',
        tags,
        summary: 'List context files',
        description: 'The files the AI is given as company context, oldest first (their text is not listed).',
        params: accountParams,
        response: { 200: contextFileListResponse },
      },
    },
    async (request) => {
      const account = await requireAccount(db, request, request.params.id);
      const rows = await db
        .selectFrom('context_files')
        .select(['id', 'name', 'file_type', 'file_size', 'created_at'])
        .where('account_id', '=', account.id)
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      return { files: rows.map((row) => ({ ...row, created_at: row.created_at.toISOString() })) };
    },
  );

  app.delete(
    '/accounts/:id/context/files/:file_id',
    {
      schema: {
        operationId: 'deleteContextFile',
        tags,
        summary: 'Delete a context file',
        description: 'The AI no longer sees it from its next answer on.',
        params: contextFileParams,
        response: { 200: contextDeletedResponse },
      },
    },
    async (request) => {
      await executeOnAccount(commands, request, request.params.id, async (trx, account) => {
        const row = await trx
          .selectFrom('context_files')
          .select('id')
          .where('account_id', '=', account.id)
          .where('id', '=', request.params.file_id)
          .executeTakeFirst();
        if (!row) throw notFound('context_file');
        return { events: [{ type: 'context_file.deleted', data: { file_id: row.id } }], result: undefined };
      });
      return { success: true as const, deleted: true as const };
    },
  );

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
