import { findUnstorableText } from '@leadline/events';
import { DomainError } from '@leadline/runtime';
import type { FastifyRequest } from 'fastify';

/**
 * The string rule at the edge, once for every partner API route (those added later included): a NUL
 * or a lone surrogate anywhere in the path parameters, the query or the body, keys included, is a 400
 * naming the field, before any route reads or writes anything.
 */
export async function refuseUnstorableText(request: FastifyRequest) {
  for (const [context, value] of [
    ['params', request.params],
    ['querystring', request.query],
    ['body', request.body],
  ] as const) {
    const problem = findUnstorableText(value, context);
    if (problem) {
      throw new DomainError(400, 'validation_failed', 'The request is not valid.', {
        errors: [{ field: problem.field, message: problem.message }],
      });
    }
  }
}
