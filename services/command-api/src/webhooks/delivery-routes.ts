import { conflict, DomainError, notFound } from '@leadline/runtime';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../app-deps';
import { requireWebhookRow, listDeliveries, queueTestDelivery, requeueDelivery } from './queries';
import {
  deliveryListResponse,
  deliveryParams,
  listDeliveriesQuery,
  queuedDeliveryResponse,
  webhookParams,
} from './schemas';

const tags = ['Webhooks'];

/** A webhook's deliveries log: read it, send a finished delivery again, send a test event. */
export const deliveryRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { db, newId, clock }) => {
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
      const webhook = await requireWebhookRow(db, request.partner.id, request.params.webhook_id);
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
      const webhook = await requireWebhookRow(db, request.partner.id, request.params.webhook_id);
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
      const webhook = await requireWebhookRow(db, request.partner.id, request.params.webhook_id);
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
