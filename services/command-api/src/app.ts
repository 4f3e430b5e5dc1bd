import fastifyRateLimit from '@fastify/rate-limit';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import {
  DomainError,
  type Clock,
  type CommandBus,
  type Database,
  type DocumentLinks,
  type DocumentStore,
  type NewId,
  type SecretBox,
} from '@leadline/runtime';
import Fastify, { type FastifyServerOptions } from 'fastify';
import {
  jsonSchemaTransform,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import { sql, type Kysely } from 'kysely';
import { accountRoutes } from './accounts/routes';
import { partnerKeyAuthentication } from './http/auth';
import { conversationRoutes } from './conversations/routes';
import { aiRoutes } from './ai/routes';
import { documentRoutes } from './documents/routes';
import { leadRoutes } from './leads/routes';
import { requirementRoutes } from './requirements/routes';
import { twilioRoutes } from './twilio/routes';
import { usageRoutes } from './usage/routes';
import { notFoundHandler, problemErrorHandler, problemJsonSchema } from './http/problem';
import { apiDescription } from './openapi-description';
import type { NumberProvider } from '@leadline/telephony';
import { webhookRoutes } from './webhooks/routes';
import { webhookEventsDocumentation } from './webhooks/documentation';

/** Every documented operation can answer with problem details; say so once, for all of them. */
const documentProblems: typeof jsonSchemaTransform = (input) => {
  const transformed = jsonSchemaTransform(input);
  if (transformed.schema.hide) return transformed;
  const response = (transformed.schema.response ?? {}) as Record<string, unknown>;
  return {
    ...transformed,
    schema: {
      ...transformed.schema,
      response: {
        ...response,
        '4XX': {
          description: 'Problem details (RFC 9457); branch on `code`.',
          content: { 'application/problem+json': { schema: problemJsonSchema } },
        },
      },
    },
  };
};

export interface AppDeps {
  db: Kysely<Database>;
  commands: CommandBus;
  numbers: NumberProvider;
  clock: Clock;
  newId: NewId;
  publicUrl: string;
  /** Twilio's auth token: when set, every Twilio webhook must carry a valid X-Twilio-Signature. */
  twilioAuthToken?: string | undefined;
  rateLimitPerMinute: number;
  /** Seals webhook signing secrets before they go on the log. */
  webhookSecrets: SecretBox;
  /** Signs and checks the `file_url` of collected documents. */
  documentLinks: DocumentLinks;
  /** Where document bytes are read from (the AI agent stores them). */
  documents: DocumentStore;
  /** Opens private targets for context page fetches (local testing only). */
  allowPrivateTargets?: boolean;
  /** Extra readiness checks (the event log's reachability), run by GET /health/ready. */
  readinessChecks?: (() => Promise<void>)[];
  logger?: FastifyServerOptions['logger'];
}

/** The command API: builds the app without listening, so tests drive it with `inject` or over HTTP. */
export async function buildApp(deps: AppDeps) {
  const app = Fastify({
    logger: deps.logger ?? false,
    genReqId: () => deps.newId(),
    bodyLimit: 2 * 1024 * 1024,
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.setErrorHandler(problemErrorHandler);
  app.setNotFoundHandler(notFoundHandler);

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Leadline Partner API', version: '1.0.0', description: apiDescription },
      // Paths in the document are relative to this server URL, as in the spec (its base path is stripped).
      servers: [{ url: `${deps.publicUrl}/v1` }],
      components: {
        securitySchemes: { partnerKey: { type: 'apiKey', in: 'header', name: 'X-Partner-Key' } },
      },
      security: [{ partnerKey: [] }],
      // The payloads partners receive, as OpenAPI 3.1 webhooks with their JSON Schemas.
      webhooks: webhookEventsDocumentation(),
    },
    transform: documentProblems,
  });
  await app.register(fastifySwaggerUi, { routePrefix: '/v1/docs' });
  app.get('/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  app.get('/health/live', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/health/ready', { schema: { hide: true } }, async () => {
    try {
      await sql`select 1`.execute(deps.db);
      await Promise.all((deps.readinessChecks ?? []).map((check) => check()));
    } catch (error) {
      throw new DomainError(503, 'not_ready', `Not ready: ${(error as Error).message}`);
    }
    return { status: 'ready' };
  });

  await app.register(
    async (v1) => {
      v1.addHook('onRequest', partnerKeyAuthentication(deps.db));
      await v1.register(fastifyRateLimit, {
        max: deps.rateLimitPerMinute,
        timeWindow: '1 minute',
        keyGenerator: (request) => request.partner.id,
        errorResponseBuilder: (_request, context) =>
          new DomainError(
            429,
            'rate_limited',
            `Too many requests: at most ${context.max} a minute per partner key.`,
          ),
      });
      await v1.register(accountRoutes, deps);
      await v1.register(leadRoutes, deps);
      await v1.register(requirementRoutes, deps);
      await v1.register(conversationRoutes, deps);
      await v1.register(usageRoutes, deps);
      await v1.register(webhookRoutes, deps);
      await v1.register(aiRoutes, deps);
    },
    { prefix: '/v1' },
  );
  // Signed URLs are their own credential: outside the partner-key hook.
  await app.register(documentRoutes, { ...deps, prefix: '/v1' });
  await app.register(twilioRoutes, deps);
  return app;
}

export type App = Awaited<ReturnType<typeof buildApp>>;
