import { notFound } from '@leadline/runtime';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { accountSequences, activeEnrollmentCount, findSequenceRow } from '@leadline/decision-state';
import { decideSequences, type SequenceCommand } from '@leadline/domain';
import { executeOnAccount, requireAccount } from '../accounts/account-stream';
import { accountParams } from '../accounts/schemas';
import type { AppDeps } from '../app-deps';
import { enrollmentRoutes } from './enrollment-routes';
import { paginationQuery } from '../http/pagination';
import { listSequences, toSequenceResponse } from './queries';
import {
  createSequenceBody,
  deleteSequenceResponse,
  sequenceListResponse,
  sequenceParams,
  sequenceResponse,
  updateSequenceBody,
} from './schemas';

const tags = ['Sequences'];

/** Steps as stored: both texts present (null where the type does not use one). */
const storedSteps = (
  steps: readonly {
    type: 'fixed' | 'ai';
    message?: string | undefined;
    instructions?: string | undefined;
    delay_hours: number;
    skip_if_replied: boolean;
  }[],
) =>
  steps.map((step) => ({
    type: step.type,
    message: step.type === 'fixed' ? (step.message ?? null) : null,
    instructions: step.type === 'ai' ? (step.instructions ?? null) : null,
    delay_hours: step.delay_hours,
    skip_if_replied: step.skip_if_replied,
  }));

export const sequenceRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const { db, commands, newId } = deps;

  /** Runs a sequence command and answers with the sequence as the read model then holds it. */
  async function onSequences(request: FastifyRequest, accountId: string, command: SequenceCommand) {
    await executeOnAccount(commands, request, accountId, async (trx) => ({
      events: decideSequences(command, await accountSequences(trx, accountId)),
      result: undefined,
    }));
  }

  app.get(
    '/accounts/:id/sequences',
    {
      schema: {
        operationId: 'listSequences',
        tags,
        summary: 'List sequences',
        description: 'Oldest first.',
        params: accountParams,
        querystring: paginationQuery,
        response: { 200: sequenceListResponse },
      },
    },
    async (request) => {
      const account = await requireAccount(db, request, request.params.id);
      const page = await listSequences(db, account.id, request.query);
      return { ...page, limit: request.query.limit, offset: request.query.offset };
    },
  );

  app.post(
    '/accounts/:id/sequences',
    {
      schema: {
        operationId: 'createSequence',
        tags,
        summary: 'Create a sequence',
        description:
          'Ordered steps, each `fixed` (a template) or `ai` (written by the AI from its instructions), sent ' +
          "`delay_hours` after the previous one, inside the lead's sending window. At most 50 steps and 100 " +
          'sequences per account (400 `sequence_limit_reached`). `is_default` true unsets the previous default.',
        params: accountParams,
        body: createSequenceBody,
        response: { 201: sequenceResponse },
      },
    },
    async (request, reply) => {
      const sequenceId = newId();
      const { steps, description, ...fields } = request.body;
      await onSequences(request, request.params.id, {
        type: 'CreateSequence',
        sequence: { id: sequenceId, ...fields, description: description ?? null, steps: storedSteps(steps) },
      });
      const row = await findSequenceRow(db, request.params.id, sequenceId);
      return reply.status(201).send(toSequenceResponse(row!));
    },
  );

  app.get(
    '/accounts/:id/sequences/:sequence_id',
    {
      schema: {
        operationId: 'getSequence',
        tags,
        summary: 'Get a sequence',
        description: "The sequence with its current steps and counters; another account's sequence is a 404.",
        params: sequenceParams,
        response: { 200: sequenceResponse },
      },
    },
    async (request) => {
      const account = await requireAccount(db, request, request.params.id);
      const row = await findSequenceRow(db, account.id, request.params.sequence_id);
      if (!row) throw notFound('sequence');
      return toSequenceResponse(row);
    },
  );

  app.patch(
    '/accounts/:id/sequences/:sequence_id',
    {
      schema: {
        operationId: 'updateSequence',
        tags,
        summary: 'Update a sequence',
        description:
          'Only the given fields change; answers the whole sequence. New `steps` apply to new enrollments only: ' +
          'leads already enrolled keep the steps they started with. `is_active` false pauses its enrollments.',
        params: sequenceParams,
        body: updateSequenceBody,
        response: { 200: sequenceResponse },
      },
    },
    async (request) => {
      const { id, sequence_id } = request.params;
      const { steps, ...changes } = request.body;
      await onSequences(request, id, {
        type: 'UpdateSequence',
        sequence_id,
        changes: { ...changes, ...(steps && { steps: storedSteps(steps) }) },
      });
      const row = await findSequenceRow(db, id, sequence_id);
      if (!row) throw notFound('sequence');
      return toSequenceResponse(row);
    },
  );

  app.delete(
    '/accounts/:id/sequences/:sequence_id',
    {
      schema: {
        operationId: 'deleteSequence',
        tags,
        summary: 'Delete a sequence',
        description:
          'Its active enrollments are cancelled (`cancelled_enrollments`); nothing more is sent from it.',
        params: sequenceParams,
        response: { 200: deleteSequenceResponse },
      },
    },
    async (request) => {
      const { id, sequence_id } = request.params;
      let cancelled = 0;
      await executeOnAccount(commands, request, id, async (trx) => {
        const sequences = await accountSequences(trx, id);
        cancelled = await activeEnrollmentCount(trx, sequence_id);
        const events = decideSequences(
          { type: 'DeleteSequence', sequence_id, active_enrollments: cancelled },
          sequences,
        );
        return { events, result: undefined };
      });
      return { success: true as const, cancelled_enrollments: cancelled };
    },
  );

  await app.register(enrollmentRoutes, deps);
};
