import fastifyRateLimit from '@fastify/rate-limit';
import { DomainError, type Clock, type Database } from '@leadline/runtime';
import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { Kysely } from 'kysely';
import { idempotencyKeys } from './idempotency';
import { postgresRateLimitStore } from './rate-limit-store';
import { refuseUnstorableText } from './text';

export interface EdgeDeps {
  db: Kysely<Database>;
  clock: Clock;
  rateLimitPerMinute: number;
}

export interface Credential {
  /** Authenticates the request (sets `request.partner`) or answers it with a 401 problem. */
  authenticate: onRequestAsyncHookHandler;
  /** What one rate-limit budget is counted per: a partner, an embed token. Unique across credentials. */
  rateLimitKey: (request: FastifyRequest) => string;
  /** Names that unit in the 429's detail ("partner key"). */
  rateLimitUnit: string;
}

/**
 * The checks every authenticated API prefix runs before its routes, registered together so that a new
 * prefix cannot forget one: the credential, the string rule (a 400 naming the request's own field,
 * before any route reads or writes), the rate limit shared by every instance, and Idempotency-Key.
 */
export async function registerEdgeChecks(scope: FastifyInstance, deps: EdgeDeps, credential: Credential) {
  scope.addHook('onRequest', credential.authenticate);
  scope.addHook('preValidation', refuseUnstorableText);
  // After authentication, which names the budget's owner.
  await scope.register(fastifyRateLimit, {
    max: deps.rateLimitPerMinute,
    timeWindow: '1 minute',
    keyGenerator: credential.rateLimitKey,
    // Shared by every instance; if the counter cannot be read, requests go on rather than fail.
    store: postgresRateLimitStore(deps.db),
    skipOnError: true,
    errorResponseBuilder: (_request, context) =>
      new DomainError(
        429,
        'rate_limited',
        `Too many requests: at most ${context.max} a minute per ${credential.rateLimitUnit}.`,
      ),
  });
  // After authentication and the rate limit: keys are per partner, and a refused request holds none.
  idempotencyKeys(scope, deps);
}
