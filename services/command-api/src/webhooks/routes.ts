import { type CommandContext } from '@leadline/runtime';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { decideWebhooks, type WebhookCommand } from '@leadline/domain';
import type { AppDeps } from '../app-deps';
import { deliveryRoutes } from './delivery-routes';
import { commandContext } from '../http/auth';
import { requireWebhookRow, listWebhookRows, loadPartnerWebhooks, toWebhookResponse } from './queries';
import {
  createWebhookBody,
  deleteWebhookResponse,
  updateWebhookBody,
  webhookListResponse,
  webhookParams,
  webhookResponse,
} from './schemas';

const tags = ['Webhooks'];

export const webhookRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const { db, commands, newId, webhookSecrets } = deps;

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
      return reply
        .status(201)
        .send(toWebhookResponse(await requireWebhookRow(db, context.partnerId, webhookId)));
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
      return toWebhookResponse(await requireWebhookRow(db, context.partnerId, webhook_id));
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
  await app.register(deliveryRoutes, deps);
};
