import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../app-deps';
import { executeAccountCommand } from './account-command';
import { accountTeamRoutes } from './team-routes';
import { createAccount } from './create-account';
import { eraseAccount } from './erasure';
import { requireAccount } from './account-stream';
import { createdAccountResponse, listAccounts, toAccountResponse } from './queries';
import {
  accountErasedResponse,
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

  app.post(
    '/accounts/:id/erase',
    {
      schema: {
        tags,
        operationId: 'eraseAccount',
        summary: 'Erase an account (privacy request)',
        description:
          'For a deletion request covering everyone the account holds (the business leaving, a privacy ' +
          'law): deactivates the account, as DELETE does, and erases every person it holds as ' +
          'POST /accounts/{id}/leads/{phone}/erase erases one: each lead, each number that texted it without ' +
          'becoming one, each number its event log alone still knows, and the personal data of its invited ' +
          'team members. Every key that sealed their personal data on the log is destroyed, and every read ' +
          'model forgets them. A `lead.erased` webhook follows for each person, then `account.erased`. What ' +
          "stays: the account itself (its name, number and settings are the business's, not personal), so " +
          'GET /accounts/{id} still answers, with no leads; its usage counters keep their counts. Asking ' +
          'again answers 200 with the same `erased_at`, and erases whatever the account gained since (a ' +
          'deactivated account still takes imports and inbound messages). The people are erased a thousand ' +
          'at a time, and those who arrive meanwhile with them: a request that fails midway (a 503) may have ' +
          'erased some already, and asking again finishes the erasure.',
        params: accountParams,
        response: { 200: accountErasedResponse },
      },
    },
    async (request) => {
      const { id } = request.params;
      const { erasedAt, leadsErased } = await eraseAccount(deps, request, id);
      return {
        id,
        status: 'deactivated' as const,
        erased_at: erasedAt.toISOString(),
        leads_erased: leadsErased,
      };
    },
  );

  await app.register(accountTeamRoutes, deps);
};
