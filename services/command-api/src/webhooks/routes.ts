import { conflict, DomainError, notFound, type CommandContext } from '@leadline/runtime';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { decideWebhooks, type WebhookCommand } from '@leadline/domain';
import type { AppDeps } from '../app-deps';
import { commandContext } from '../http/auth';
import {
  findWebhookRow,
  listDeliveries,
  listWebhookRows,
  loadPartnerWebhooks,
  queueTestDelivery,
  requeueDelivery,
  toWebhookResponse,
} from './queries';
import {
  createWebhookBody,
  deleteWebhookResponse,
  deliveryListResponse,
  deliveryParams,
  listDeliveriesQuery,
  queuedDeliveryResponse,
  updateWebhookBody,
  webhookListResponse,
  webhookParams,
  webhookResponse,
} from './schemas';

const tags = ['Webhooks'];

export const webhookRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const { db, commands, newId, clock, webhookSecrets } = deps;

  /**
   * Every webhook change of a partner is decided under one lock against its caught-up partition, so
   * the 20-webhook limit holds under concurrent creates.
   */
  const executeOnWebhooks = (context: CommandContext, command: WebhookCommand) =>
    commands.execute({
      stream: { topic: 'partner' },
      context,
      lockKeys: [`partner:${context.partnerId}:webhooks`],
      consistency: 'partition',
      async decide(trx) {
        const state = await loadPartnerWebhooks(trx, context.partnerId);
        return { events: decideWebhooks(command, state), result: undefined };
      },
    });

  async function ownWebhook(partnerId: string, webhookId: string) {
    const row = await findWebhookRow(db, partnerId, webhookId);
    if (!row) throw notFound('webhook');
    return row;
  }

  app.post(
    '/webhooks',
    {
      schema: {
        tags,
        operationId: 'createWebhook',
        summary: 'Create a webhook',
        description:
          'Subscribes an HTTPS endpoint to events of every sub-account of the partner. At most 20 webhooks per partner (409 `webhook_limit_reached`); the secret is never returned.',
        body: createWebhookBody,
        response: { 201: webhookResponse },
      },
    },
    async (request, reply) => {
      const context = commandContext(request);
      const webhookId = newId();
      const { secret, ...fields } = request.body;
      await executeOnWebhooks(context, {
        type: 'CreateWebhook',
        webhook_id: webhookId,
        ...fields,
        secret_ciphertext: webhookSecrets.seal(secret, { partnerId: context.partnerId, webhookId }),
      });
      return reply.status(201).send(toWebhookResponse(await ownWebhook(context.partnerId, webhookId)));
    },
  );

  app.get(
    '/webhooks',
    {
      schema: {
        tags,
        operationId: 'listWebhooks',
        summary: 'List webhooks',
        description: "The partner's webhooks, disabled ones included.",
        response: { 200: webhookListResponse },
      },
    },
    async (request) => ({ webhooks: (await listWebhookRows(db, request.partner.id)).map(toWebhookResponse) }),
  );

  app.patch(
    '/webhooks/:webhook_id',
    {
      schema: {
        tags,
        operationId: 'updateWebhook',
        summary: 'Update a webhook',
        description: 'Returns the whole webhook after the change.',
        params: webhookParams,
        body: updateWebhookBody,
        response: { 200: webhookResponse },
      },
    },
    async (request) => {
      const context = commandContext(request);
      const { webhook_id } = request.params;
      await executeOnWebhooks(context, { type: 'UpdateWebhook', webhook_id, ...request.body });
      return toWebhookResponse(await ownWebhook(context.partnerId, webhook_id));
    },
  );

  app.delete(
    '/webhooks/:webhook_id',
    {
      schema: {
        tags,
        operationId: 'deleteWebhook',
        summary: 'Delete a webhook',
        description: 'Pending deliveries of the webhook are cancelled.',
        params: webhookParams,
        response: { 200: deleteWebhookResponse },
      },
    },
    async (request) => {
      await executeOnWebhooks(commandContext(request), {
        type: 'DeleteWebhook',
        webhook_id: request.params.webhook_id,
      });
      return { success: true as const, deleted: true as const };
    },
  );

  app.get(
    '/webhooks/:webhook_id/deliveries',
    {
      schema: {
        tags,
        operationId: 'listDeliveries',
        summary: 'List the deliveries of a webhook',
        description: 'Newest first, each with every attempt, its answer and the next attempt.',
        params: webhookParams,
        querystring: listDeliveriesQuery,
        response: { 200: deliveryListResponse },
      },
    },
    async (request) => {
      const webhook = await ownWebhook(request.partner.id, request.params.webhook_id);
      const { deliveries, total } = await listDeliveries(db, webhook.id, request.query);
      return { deliveries, total, limit: request.query.limit, offset: request.query.offset };
    },
  );

  app.post(
    '/webhooks/:webhook_id/deliveries/:delivery_id/retry',
    {
      schema: {
        tags,
        operationId: 'retryDelivery',
        summary: 'Retry a delivery',
        description:
          'Sends a finished delivery again, with the same delivery id and body, now; should that fail, ' +
          'the retry schedule starts over. A pending delivery is a 409.',
        params: deliveryParams,
        response: { 202: queuedDeliveryResponse },
      },
    },
    async (request, reply) => {
      const webhook = await ownWebhook(request.partner.id, request.params.webhook_id);
      const now = clock.now();
      const outcome = await requeueDelivery(db, webhook.id, request.params.delivery_id, now);
      if (outcome === 'not_found') throw notFound('delivery');
      if (outcome === 'pending') {
        throw conflict('delivery_pending', 'This delivery is still pending; its next attempt is scheduled.');
      }
      return reply.status(202).send({
        delivery_id: request.params.delivery_id,
        status: 'pending' as const,
        next_attempt_at: now.toISOString(),
      });
    },
  );

  app.post(
    '/webhooks/:webhook_id/test',
    {
      schema: {
        tags,
        operationId: 'sendTestEvent',
        summary: 'Send a test event',
        description:
          'Queues a signed `webhook.test` event (`account_id` null) for immediate delivery; follow it in ' +
          'the deliveries log. The webhook must be active.',
        params: webhookParams,
        response: { 202: queuedDeliveryResponse },
      },
    },
    async (request, reply) => {
      const webhook = await ownWebhook(request.partner.id, request.params.webhook_id);
      if (!webhook.active) {
        throw new DomainError(409, 'webhook_inactive', 'Activate the webhook before sending a test event.');
      }
      const deliveryId = newId();
      const now = clock.now();
      await queueTestDelivery(db, webhook, { deliveryId, eventId: newId() }, now);
      return reply
        .status(202)
        .send({ delivery_id: deliveryId, status: 'pending' as const, next_attempt_at: now.toISOString() });
    },
  );
};
