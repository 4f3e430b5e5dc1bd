import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../app-deps';
import { executeAccountCommand } from './account-command';
import { accountTeamRoutes } from './team-routes';
import { createAccount } from './create-account';
import { accountErasureRoutes } from './erasure-routes';
import { requireAccount } from './account-stream';
import { createdAccountResponse, listAccounts, toAccountResponse } from './queries';
import {
  accountListResponse,
  accountParams,
  accountResponse,
  createAccountBody,
  deactivateResponse,
  listAccountsQuery,
  updateAccountBody,
} from './schemas';

const tags = ['Accounts'];

export const accountRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const { db } = deps;

  app.post(
    '/accounts',
    {
      schema: {
        tags,
        operationId: 'createAccount',
        summary: 'Create an account',
        description:
          'Creates a sub-account with its own phone number (provisioned when `phone_number` is omitted) and isolated data. The slug is derived from the name and never changes.',
        body: createAccountBody,
        response: { 201: accountResponse },
      },
    },
    async (request, reply) => {
      const created = await createAccount(deps, request, request.body);
      return reply.status(201).send(createdAccountResponse(created));
    },
  );

  app.get(
    '/accounts',
    {
      schema: {
        tags,
        operationId: 'listAccounts',
        summary: 'List accounts',
        description:
          "The partner's accounts, newest first, with their counters; filter by `status` or a name `search`.",
        querystring: listAccountsQuery,
        response: { 200: accountListResponse },
      },
    },
    async (request) => {
      const { rows, total } = await listAccounts(db, request.partner.id, request.query);
      const accounts = rows
        .map(toAccountResponse)
        .map(({ id, name, status, phone_number, stats, created_at }) => ({
          id,
          name,
          status,
          phone_number,
          stats,
          created_at,
        }));
      return { accounts, total, limit: request.query.limit, offset: request.query.offset };
    },
  );

  app.get(
    '/accounts/:id',
    {
      schema: {
        tags,
        operationId: 'getAccount',
        summary: 'Get an account',
        description:
          "The whole account with its branding, metadata and counters. Another partner's account is a 404.",
        params: accountParams,
        response: { 200: accountResponse },
      },
    },
    async (request) => toAccountResponse(await requireAccount(db, request, request.params.id)),
  );

  app.patch(
    '/accounts/:id',
    {
      schema: {
        tags,
        operationId: 'updateAccount',
        summary: 'Update an account',
        description: 'Returns the whole account after the change.',
        params: accountParams,
        body: updateAccountBody,
        response: { 200: accountResponse },
      },
    },
    async (request) => {
      await executeAccountCommand(deps, request, request.params.id, {
        type: 'UpdateAccount',
        ...request.body,
      });
      return toAccountResponse(await requireAccount(db, request, request.params.id));
    },
  );

  app.delete(
    '/accounts/:id',
    {
      schema: {
        tags,
        operationId: 'deactivateAccount',
        summary: 'Deactivate an account',
        description:
          'Data is kept, the AI stops answering and sequences pause. Deactivating a deactivated account ' +
          'changes nothing and answers the same. PATCH `status: active` reactivates.',
        params: accountParams,
        response: { 200: deactivateResponse },
      },
    },
    async (request) => {
      const { id } = request.params;
      const { events } = await executeAccountCommand(deps, request, id, { type: 'DeactivateAccount' });
      // Deactivated now (the event says when), or already (the read model does).
      const deactivatedAt =
        events[0]?.occurred_at ?? (await requireAccount(db, request, id)).deactivated_at?.toISOString();
      return { id, status: 'deactivated' as const, deactivated_at: deactivatedAt! };
    },
  );

  await app.register(accountErasureRoutes, deps);
  await app.register(accountTeamRoutes, deps);
};
