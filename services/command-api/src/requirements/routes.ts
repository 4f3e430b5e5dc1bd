import type { EventOf } from '@leadline/events';
import { notFound, type Database } from '@leadline/runtime';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Kysely, Selectable } from 'kysely';
import { decideChecklist, type RequirementCommand } from '@leadline/domain';
import { executeOnAccount, requireAccount } from '../accounts/account-stream';
import { accountParams } from '../accounts/schemas';
import type { AppDeps } from '../app-deps';
import { deletedResponse } from '../leads/schemas';
import {
  createRequirementBody,
  requirementListResponse,
  requirementParams,
  requirementResponse,
  updateRequirementBody,
} from './schemas';

const tags = ['Requirements'];

type RequirementRow = Selectable<Database['requirements']>;

const toResponse = ({ id, name, type, description, required, created_at }: RequirementRow) => ({
  id,
  name,
  type,
  description,
  required,
  created_at: created_at.toISOString(),
});

const requirementsOf = (db: Kysely<Database>, accountId: string) =>
  db
    .selectFrom('requirements')
    .selectAll()
    .where('account_id', '=', accountId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();

export const requirementRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const { db, commands, newId } = deps;

  function execute(request: FastifyRequest, accountId: string, command: RequirementCommand) {
    return executeOnAccount(commands, request, accountId, async (trx) => {
      const rows = await requirementsOf(trx, accountId);
      if (command.type !== 'CreateRequirement' && !rows.some((row) => row.id === command.requirement_id)) {
        throw notFound('requirement');
      }
      const requirements = rows.map(({ id, name, type, description, required }) => ({
        requirement_id: id,
        name,
        type,
        description,
        required,
      }));
      return { events: decideChecklist(command, { requirements }), result: undefined };
    });
  }

  async function readBack(accountId: string, requirementId: string) {
    const row = await db
      .selectFrom('requirements')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', '=', requirementId)
      .executeTakeFirst();
    if (!row) throw notFound('requirement');
    return toResponse(row);
  }

  app.post(
    '/accounts/:id/requirements',
    {
      schema: {
        tags,
        operationId: 'createRequirement',
        summary: 'Add a checklist requirement',
        description: 'Names are unique per account (409 `requirement_exists`); at most 100 per account.',
        params: accountParams,
        body: createRequirementBody,
        response: { 201: requirementResponse },
      },
    },
    async (request, reply) => {
      const { description, ...body } = request.body;
      const { events } = await execute(request, request.params.id, {
        type: 'CreateRequirement',
        requirement: { requirement_id: newId(), ...body, description: description ?? null },
      });
      const { data, occurred_at } = events[0] as EventOf<'requirement.created'>;
      const { requirement_id, ...fields } = data;
      return reply.status(201).send({ id: requirement_id, ...fields, created_at: occurred_at });
    },
  );

  app.get(
    '/accounts/:id/requirements',
    {
      schema: {
        tags,
        operationId: 'listRequirements',
        summary: 'List requirements',
        description: "The account's checklist requirements, in the order they were added.",
        params: accountParams,
        response: { 200: requirementListResponse },
      },
    },
    async (request) => {
      const account = await requireAccount(db, request, request.params.id);
      return { requirements: (await requirementsOf(db, account.id)).map(toResponse) };
    },
  );

  app.patch(
    '/accounts/:id/requirements/:requirement_id',
    {
      schema: {
        tags,
        operationId: 'updateRequirement',
        summary: 'Update a requirement',
        description: 'Returns the requirement after the change.',
        params: requirementParams,
        body: updateRequirementBody,
        response: { 200: requirementResponse },
      },
    },
    async (request) => {
      const { id, requirement_id } = request.params;
      await execute(request, id, { type: 'UpdateRequirement', requirement_id, changes: request.body });
      return readBack(id, requirement_id);
    },
  );

  app.delete(
    '/accounts/:id/requirements/:requirement_id',
    {
      schema: {
        tags,
        operationId: 'deleteRequirement',
        summary: 'Delete a requirement',
        description: 'Values already collected for leads are kept.',
        params: requirementParams,
        response: { 200: deletedResponse },
      },
    },
    async (request) => {
      const { id, requirement_id } = request.params;
      await execute(request, id, { type: 'DeleteRequirement', requirement_id });
      return { success: true as const, deleted: true as const };
    },
  );
};
