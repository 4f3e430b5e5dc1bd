import { contextLimits } from '@leadline/domain';
import { conflict, DomainError, notFound } from '@leadline/runtime';
import { validatorCompiler, type FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { executeOnAccount, requireAccount } from '../accounts/account-stream';
import { accountParams } from '../accounts/schemas';
import type { AppDeps } from '../app-deps';
import {
  contextDeletedResponse,
  contextFileListResponse,
  contextFileParams,
  contextFileResponse,
  contextFileUpload,
  MAX_CONTEXT_FILE_BYTES,
} from './schemas';

const tags = ['AI configuration'];

const badRequest = (code: string, message: string) => new DomainError(400, code, message);

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

/** Context files: text the AI is given as company context (multipart upload, registered by `aiRoutes`). */
export const contextFileRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { db, commands, newId }) => {
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
};
