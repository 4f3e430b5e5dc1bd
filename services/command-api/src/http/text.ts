import { findUnstorableText } from '@leadline/events';
import { DomainError } from '@leadline/runtime';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';

const PARTS = ['params', 'query', 'body'] as const;
const CONTEXTS = { params: 'params', query: 'querystring', body: 'body' } as const;

/**
 * The string rule at the edge, once for every partner API route (those added later included): a NUL
 * or a lone surrogate anywhere in the path parameters, the query or the body, keys included, is a 400
 * naming the field, before any route reads or writes anything. A callback hook, not an async one: it
 * runs on every request, and has nothing to wait for.
 */
export function refuseUnstorableText(
  request: FastifyRequest,
  _reply: FastifyReply,
  done: HookHandlerDoneFunction,
) {
  for (const part of PARTS) {
    const problem = findUnstorableText(request[part], CONTEXTS[part]);
    if (problem) {
      done(
        new DomainError(400, 'validation_failed', 'The request is not valid.', {
          errors: [{ field: problem.field, message: problem.message }],
        }),
      );
      return;
    }
  }
  done();
}
