import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import {
  collectProcessMetrics,
  DomainError,
  httpRequestSeconds,
  METRICS_CONTENT_TYPE,
  parkedCounts,
  scrapeMetrics,
  watchParkedRecords,
} from '@leadline/runtime';
import Fastify from 'fastify';
import {
  jsonSchemaTransform,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import { sql } from 'kysely';
import { READINESS_BOUND_MS, withinReadinessBound } from './http/readiness';
import { accountRoutes } from './accounts/routes';
import { partnerKeyAuthentication } from './http/auth';
import { createPartnerKeyCache } from './http/partner-key-cache';
import { parseJsonAsUtf8, refuseContentEncoding } from './http/body-encoding';
import { registerEdgeChecks } from './http/edge';
import { consentRoutes } from './consent/routes';
import { conversationRoutes } from './conversations/routes';
import { aiRoutes } from './ai/routes';
import { complianceRoutes } from './compliance/routes';
import { documentRoutes } from './documents/routes';
import { leadRoutes } from './leads/routes';
import { requirementRoutes } from './requirements/routes';
import { sequenceRoutes } from './sequences/routes';
import { twilioRoutes } from './twilio/routes';
import { usageRoutes } from './usage/routes';
import { finishOpenApiDocument } from './http/openapi-contract';
import { notFoundHandler, problemClientErrorHandler, problemErrorHandler } from './http/problem';
import { apiDescription, apiTags } from './openapi-description';
import { webhookRoutes } from './webhooks/routes';
import type { AppDeps } from './app-deps';
import { webhookEventsDocumentation } from './webhooks/documentation';
import { embedApiRoutes, EMBED_API_PREFIX } from './embed/api';
import { embedTokenAuthentication } from './embed/auth';
import { dashboardRoutes } from './embed/dashboard';
import { embedTokenRoutes } from './embed/routes';
import { requestForLog } from './http/log';

/** The dashboard's own API (under /embed) is not part of the partner contract. */
const documentPartnerRoutes: typeof jsonSchemaTransform = (input) =>
  input.url.startsWith('/embed')
    ? { schema: { ...input.schema, hide: true }, url: input.url }
    : jsonSchemaTransform(input);

/** The command API: builds the app without listening, so tests drive it with `inject` or over HTTP. */
export async function buildApp(deps: AppDeps) {
  // Embed tokens travel in a query string: request logs never carry one.
  const logger =
    deps.logger && typeof deps.logger === 'object'
      ? { ...deps.logger, serializers: { req: requestForLog, ...deps.logger.serializers } }
      : (deps.logger ?? false);
  const app = Fastify({
    logger,
    genReqId: () => deps.newId(),
    bodyLimit: 2 * 1024 * 1024,
    // A malformed URL or an overlong path parameter is answered before routing: problem+json too.
    frameworkErrors: problemErrorHandler,
    // What Node's HTTP parser refuses before routing: problem+json with a code as well.
    clientErrorHandler: problemClientErrorHandler,
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.setErrorHandler(problemErrorHandler);
  app.setNotFoundHandler(notFoundHandler);
  // Every route, partner API and dashboard alike: bodies are read as sent, JSON as UTF-8.
  app.addHook('onRequest', refuseContentEncoding);
  parseJsonAsUtf8(app);

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Leadline Partner API',
        version: '1.0.0',
        description: apiDescription,
        contact: { name: 'Leadline support', url: 'https://docs.leadline.dev/support' },
        license: { name: 'Proprietary', url: 'https://docs.leadline.dev/terms' },
      },
      // Paths in the document are relative to this server URL, as in the spec (its base path is stripped).
      servers: [{ url: `${deps.publicUrl}/v1` }],
      components: {
        securitySchemes: { partnerKey: { type: 'apiKey', in: 'header', name: 'X-Partner-Key' } },
      },
      security: [{ partnerKey: [] }],
      tags: apiTags,
      // The payloads partners receive, as OpenAPI 3.1 webhooks with their JSON Schemas.
      webhooks: webhookEventsDocumentation(),
    },
    transform: documentPartnerRoutes,
    transformObject: finishOpenApiDocument,
  });
  await app.register(fastifySwaggerUi, { routePrefix: '/v1/docs' });
  app.get('/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  // Prometheus, without a partner key: labels are route templates and statuses, never tenant data.
  collectProcessMetrics();
  const unwatchParked = watchParkedRecords(deps.db);
  app.addHook('onClose', async () => unwatchParked());
  // A callback hook, not an async one: it runs on every request, and has nothing to wait for.
  app.addHook('onResponse', (request, reply, done) => {
    httpRequestSeconds.observe(
      {
        method: request.method,
        route: request.routeOptions.url ?? 'unmatched',
        status_code: String(reply.statusCode),
      },
      reply.elapsedTime / 1000,
    );
    done();
  });
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) =>
    reply.type(METRICS_CONTENT_TYPE).send(await scrapeMetrics()),
  );

  app.get('/health/live', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  // Answers within READINESS_BOUND_MS whatever is down: a load balancer or an orchestrator polling a
  // silent broker or a full pool gets its "not ready" in time, instead of a poll that times out.
  app.get('/health/ready', { schema: { hide: true } }, async (request) => {
    try {
      return await withinReadinessBound(async () => {
        await sql`select 1`.execute(deps.db);
        await Promise.all((deps.readinessChecks ?? []).map((check) => check()));
        // Records consumers could not apply wait for an operator (`npm run parked`); ready, but said.
        return { status: 'ready', parked_records: await parkedCounts(deps.db) };
      }, deps.readinessBoundMs ?? READINESS_BOUND_MS);
    } catch (error) {
      // Anyone may ask; why it is not ready (hosts, addresses, library errors) goes to our log only.
      request.log.warn({ err: error }, 'not ready');
      throw new DomainError(503, 'not_ready', 'Not ready.');
    }
  });

  const partnerKeys = deps.partnerKeyCache && (await createPartnerKeyCache(deps.partnerKeyCache));
  app.addHook('onClose', async () => partnerKeys?.close());
  await app.register(
    async (v1) => {
      await registerEdgeChecks(v1, deps, {
        authenticate: partnerKeyAuthentication(deps.db, {
          failuresPerMinute: deps.authFailuresPerMinute,
          keys: partnerKeys,
        }),
        rateLimitKey: (request) => request.partner.id,
        rateLimitUnit: 'partner key',
      });
      await v1.register(accountRoutes, deps);
      await v1.register(leadRoutes, deps);
      await v1.register(consentRoutes, deps);
      await v1.register(requirementRoutes, deps);
      await v1.register(sequenceRoutes, deps);
      await v1.register(conversationRoutes, deps);
      await v1.register(usageRoutes, deps);
      await v1.register(webhookRoutes, deps);
      await v1.register(embedTokenRoutes, deps);
      await v1.register(aiRoutes, deps);
      await v1.register(complianceRoutes, deps);
    },
    { prefix: '/v1' },
  );
  // Wrapped, so the prefix is not handed on with deps to the route plugins the embed API reuses.
  await app.register(
    async (embed) => {
      // The token is the credential and the unit of the rate limit (prefixed: the counters are shared
      // with the partner keys').
      await registerEdgeChecks(embed, deps, {
        authenticate: embedTokenAuthentication(deps.db, deps.clock),
        rateLimitKey: (request) => `embed:${request.embed!.tokenId}`,
        rateLimitUnit: 'embed token',
      });
      await embed.register(embedApiRoutes, deps);
    },
    { prefix: EMBED_API_PREFIX },
  );
  await app.register(dashboardRoutes, deps);
  // Signed URLs are their own credential: outside the partner-key hook.
  await app.register(documentRoutes, { ...deps, prefix: '/v1' });
  await app.register(twilioRoutes, deps);
  return app;
}

export type App = Awaited<ReturnType<typeof buildApp>>;
