import { DomainError } from '@leadline/runtime';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';

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

export const problemJsonSchema = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail', 'code'],
  properties: {
    type: { type: 'string', description: 'A URI naming the problem type.' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string', description: 'What went wrong, for a person to read.' },
    code: { type: 'string', description: 'Stable, machine-readable: validation_failed, account_not_found…' },
    instance: { type: 'string' },
    errors: {
      type: 'array',
      description: 'For validation_failed: one entry per invalid field.',
      items: {
        type: 'object',
        properties: { field: { type: 'string' }, message: { type: 'string' } },
      },
    },
  },
};

const titles: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Content Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

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
    detail,
    code,
    instance: request.url,
    ...extra,
  };
  return reply.status(status).type('application/problem+json').send(problem);
}

/** Turns every error into problem+json; internals of a 5xx never reach the client. */
export function problemErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (error instanceof DomainError) {
    if (error.status === 503) reply.header('retry-after', '1');
    return sendProblem(reply, request, error.status, error.code, error.message, error.details);
  }
  if (hasZodFastifySchemaValidationErrors(error)) {
    const errors = error.validation.map((issue) => ({
      field: [error.validationContext, ...issue.instancePath.split('/').filter(Boolean)].join('.'),
      message: issue.message ?? 'Invalid value.',
    }));
    return sendProblem(reply, request, 400, 'validation_failed', 'The request is not valid.', { errors });
  }
  if (isResponseSerializationError(error)) {
    request.log.error({ err: error, issues: error.cause.issues }, 'response does not match its schema');
    return sendProblem(reply, request, 500, 'internal_error', 'Something went wrong on our side.');
  }
  const status = error.statusCode ?? 500;
  if (status >= 500) {
    request.log.error({ err: error }, 'request failed');
    return sendProblem(reply, request, 500, 'internal_error', 'Something went wrong on our side.');
  }
  // Fastify's own client errors: malformed JSON, body too large, unsupported media type...
  const code =
    status === 413
      ? 'payload_too_large'
      : status === 414
        ? 'uri_too_long'
        : status === 415
          ? 'unsupported_media_type'
          : 'bad_request';
  return sendProblem(reply, request, status, code, error.message);
}

export function notFoundHandler(request: FastifyRequest, reply: FastifyReply) {
  return sendProblem(reply, request, 404, 'route_not_found', `No route ${request.method} ${request.url}.`);
}
