import { notFound } from '@leadline/runtime';
import { validatorCompiler, type FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { decideResumeAi, decideSendMessage } from '@leadline/domain';
import { conversationState } from '@leadline/decision-state';
import { executeOnAccount, requireAccount } from '../accounts/account-stream';
import { accountParams } from '../accounts/schemas';
import type { AppDeps } from '../app-deps';
import { conversationExists, listConversations, listMessages } from './queries';
import {
  conversationListResponse,
  conversationParams,
  emptyBody,
  listConversationsQuery,
  messageListResponse,
  resumeAiResponse,
  sendMessageBody,
  sendMessageResponse,
} from './schemas';
import { paginationQuery } from '../http/pagination';

const tags = ['Conversations'];

export const conversationRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const { db, commands, clock, newId } = deps;

  app.get(
    '/accounts/:id/conversations',
    {
      schema: {
        tags,
        operationId: 'listConversations',
        summary: 'List conversations',
        description:
          'Most recent first. A conversation outlives its lead; `name` and `lead_status` are then null.',
        params: accountParams,
        querystring: listConversationsQuery,
        response: { 200: conversationListResponse },
      },
    },
    async (request) => {
      const account = await requireAccount(db, request, request.params.id);
      const page = await listConversations(db, account.id, request.query, clock.now());
      return { ...page, limit: request.query.limit, offset: request.query.offset };
    },
  );

  app.get(
    '/accounts/:id/conversations/:phone/messages',
    {
      schema: {
        tags,
        operationId: 'listMessages',
        summary: "List a conversation's messages",
        description: 'Newest first. A 404 when the account has neither a lead nor messages with this phone.',
        params: conversationParams,
        querystring: paginationQuery,
        response: { 200: messageListResponse },
      },
    },
    async (request) => {
      const account = await requireAccount(db, request, request.params.id);
      if (!(await conversationExists(db, account.id, request.params.phone))) throw notFound('lead');
      const page = await listMessages(
        db,
        account.id,
        request.params.phone,
        request.query,
        deps.documentLinks,
      );
      return { ...page, limit: request.query.limit, offset: request.query.offset };
    },
  );

  app.post(
    '/accounts/:id/conversations/:phone/messages',
    {
      schema: {
        tags,
        operationId: 'sendMessage',
        summary: 'Send a manual message',
        description:
          "Queued for sending at once (its `status` follows delivery). Pauses the AI in this conversation until resume-ai or the account's `ai_pause_minutes`, and clears `needs_handoff`; the first outbound message moves a `new` lead to `contacted`. " +
          'A 409 `lead_opted_out` when the number opted out, `account_deactivated` when the account is.',
        params: conversationParams,
        body: sendMessageBody,
        response: { 200: sendMessageResponse },
      },
    },
    async (request) => {
      const { id, phone } = request.params;
      const messageId = newId();
      await executeOnAccount(commands, request, id, async (trx, account) => {
        const state = await conversationState(trx, deps.personalDataKeys, account, phone);
        const command = {
          type: 'SendMessage' as const,
          message_id: messageId,
          phone,
          body: request.body.body,
          source: 'manual' as const,
          sender_name: request.body.sender_name ?? null,
        };
        return { events: decideSendMessage(command, state, clock.now()), result: undefined };
      });
      return {
        success: true as const,
        message_id: messageId,
        direction: 'outbound' as const,
        source: 'manual' as const,
      };
    },
  );

  app.post(
    '/accounts/:id/conversations/:phone/resume-ai',
    {
      schema: {
        tags,
        operationId: 'resumeAi',
        summary: 'Resume the AI',
        description:
          'Ends a pause from a manual message and clears `needs_handoff`. Resuming an active AI changes nothing. ' +
          'Takes no body (or `{}`); a field in it is a 400.',
        params: conversationParams,
        body: emptyBody,
        response: { 200: resumeAiResponse },
      },
      // No body reaches the validator as null; a body that is there must be `{}`.
      validatorCompiler: (route) => {
        const validate = validatorCompiler(route as unknown as Parameters<typeof validatorCompiler>[0]);
        return route.httpPart === 'body'
          ? (data: unknown) => (data === null || data === undefined ? { value: undefined } : validate(data))
          : validate;
      },
    },
    async (request) => {
      const { id, phone } = request.params;
      await executeOnAccount(commands, request, id, async (trx, account) => {
        const state = await conversationState(trx, deps.personalDataKeys, account, phone);
        return { events: decideResumeAi(phone, state, clock.now()), result: undefined };
      });
      return { success: true as const, ai_enabled: true as const };
    },
  );
};
