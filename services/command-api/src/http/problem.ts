import type { Socket } from 'node:net';
import { DomainError, isConnectionLost, isDatabaseBusy } from '@leadline/runtime';
import { z } from 'zod';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { errorCatalog, errorCodes } from './error-catalog';

/** RFC 9457 problem details; `code` is stable and is what clients should branch on. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  instance: string;
  errors?: { field: string; message: string }[];
}

const codeTable = errorCodes
  .map((code) => `| \`${code}\` | ${errorCatalog[code].status} | ${errorCatalog[code].description} |`)
  .join('\n');

/** The Problem component of the OpenAPI document: `code` is an enum of the error catalog. */
export const problemSchema = z
  .object({
    type: z.url().max(2048).meta({
      description: 'A URI naming the problem type: `https://docs.leadline.dev/problems/<code>`.',
      example: 'https://docs.leadline.dev/problems/lead_not_found',
    }),
    title: z.string().max(100).meta({ description: 'The HTTP reason phrase.', example: 'Not Found' }),
    status: z.number().int().min(400).max(599).meta({ description: 'The HTTP status, repeated.' }),
    detail: z.string().max(2000).meta({ description: 'What went wrong, for a person to read.' }),
    code: z.enum(errorCodes).meta({
      description: `Stable and machine-readable: branch on it.\n\n| code | status | meaning |\n| --- | --- | --- |\n${codeTable}`,
      'x-enumDescriptions': Object.fromEntries(
        errorCodes.map((code) => [code, errorCatalog[code].description]),
      ),
    }),
    instance: z.string().max(2048).meta({ description: 'The path of the request that failed.' }),
    errors: z
      .array(
        z
          .object({
            field: z.string().max(200).meta({ description: 'Where: `body.leads.3.phone`, `query.limit`…' }),
            message: z.string().max(500),
          })
          .meta({ id: 'FieldError' }),
      )
      .max(1000)
      .optional()
      .meta({ description: 'For `validation_failed`: one entry per invalid field.' }),
  })
  .catchall(z.unknown())
  .meta({
    id: 'Problem',
    description:
      'RFC 9457 problem details, as `application/problem+json`. Some codes add members of their own ' +
      '(`webhook_limit_reached` adds `limit`).',
  });

const titles: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  408: 'Request Timeout',
  413: 'Content Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

export function sendProblem(
  reply: FastifyReply,
  request: FastifyRequest,
  status: number,
  code: string,
  detail: string,
  extra: Partial<Problem> = {},
) {
  const problem: Problem = {
    type: `https://docs.leadline.dev/problems/${code}`,
    title: titles[status] ?? 'Error',
    status,
    // Both can echo what the client sent (an overlong URL is a 414 about itself): bounded as documented.
    detail: clip(detail, 2000),
    code,
    instance: clip(request.url, 2048),
    ...extra,
  };
  return reply.status(status).type('application/problem+json').send(problem);
}

const fastifyClientErrorCodes: Record<number, string> = {
  413: 'payload_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
};

/** Turns every error into problem+json; internals of a 5xx never reach the client. */
export function problemErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (error instanceof DomainError) {
    if (error.status === 503) reply.header('retry-after', '1');
    return sendProblem(reply, request, error.status, error.code, error.message, error.details);
  }
  if (hasZodFastifySchemaValidationErrors(error)) {
    const fieldOf = (path: string, ...more: string[]) =>
      [error.validationContext, ...path.split('/').filter(Boolean), ...more].join('.');
    // An unknown field is reported at its own name, so a typo is found without reading the message.
    const errors = error.validation.flatMap((issue) =>
      issue.keyword === 'unrecognized_keys'
        ? ((issue.params as { keys?: string[] }).keys ?? []).map((key) => ({
            field: fieldOf(issue.instancePath, key),
            message: `Unknown field "${key}".`,
          }))
        : [{ field: fieldOf(issue.instancePath), message: issue.message ?? 'Invalid value.' }],
    );
    return sendProblem(reply, request, 400, 'validation_failed', 'The request is not valid.', { errors });
  }
  if (isResponseSerializationError(error)) {
    request.log.error({ err: error, issues: error.cause.issues }, 'response does not match its schema');
    return sendProblem(reply, request, 500, 'internal_error', 'Something went wrong on our side.');
  }
  // A read's timeout, refused or lost connection (a write's is the command bus's, as a DomainError).
  // A lost connection (a restart, a failover) committed nothing, unless it was lost during the COMMIT
  // itself; the route's own writes are rows a retry replaces or adds to harmlessly (a token, a setting).
  if (isDatabaseBusy(error) || isConnectionLost(error)) {
    request.log.warn({ err: error }, 'database busy');
    reply.header('retry-after', '1');
    return sendProblem(
      reply,
      request,
      503,
      'database_busy',
      'The database did not answer in time or had no connection to give; retry shortly.',
    );
  }
  const status = error.statusCode ?? 500;
  if (status >= 500) {
    request.log.error({ err: error }, 'request failed');
    return sendProblem(reply, request, 500, 'internal_error', 'Something went wrong on our side.');
  }
  // Fastify's own client errors: malformed JSON, body too large, unsupported media type...
  const code = fastifyClientErrorCodes[status] ?? 'bad_request';
  return sendProblem(reply, request, status, code, error.message);
}

/**
 * Requests Node's HTTP parser refuses before any route sees them (framing, chunking, a header name or a
 * path byte it cannot read, Content-Length with Transfer-Encoding, headers over the limit, a request
 * too slow to arrive) are answered as problem+json with a `code` too, then the connection is closed: no
 * request was read, so nothing runs.
 */
export function problemClientErrorHandler(
  this: { log: { trace(object: object, message: string): void } },
  error: Error & { code?: string },
  socket: Socket,
) {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, detail] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'request_timeout', 'The request did not arrive in time.']
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'headers_too_large', 'The request line and headers are over the size the server reads.']
        : [400, 'malformed_request', `The HTTP request could not be read (${error.code ?? 'unknown'}).`];
  this.log.trace({ err: error }, 'client error');
  const problem: Problem = {
    type: `https://docs.leadline.dev/problems/${code}`,
    title: titles[status]!,
    status,
    detail,
    code,
    // The request line was not read, so there is no path to name.
    instance: '',
  };
  const body = JSON.stringify(problem);
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${titles[status]}\r\nContent-Type: application/problem+json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

export function notFoundHandler(request: FastifyRequest, reply: FastifyReply) {
  return sendProblem(reply, request, 404, 'route_not_found', `No route ${request.method} ${request.url}.`);
}
