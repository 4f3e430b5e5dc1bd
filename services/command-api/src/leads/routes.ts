import { notFound } from '@leadline/runtime';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { decideLead, type LeadCommand, type Lead } from '@leadline/domain';
import { findLeadRow, toLead } from '@leadline/decision-state';
import { executeOnAccount, requireAccount } from '../accounts/account-stream';
import { accountParams } from '../accounts/schemas';
import type { AppDeps } from '../app-deps';
import { leadErasureRoutes } from './erasure-routes';
import { leadImportRoutes } from './import-routes';
import { leadChecklist, leadDetails, listLeads } from './queries';
import {
  checklistResponse,
  deletedResponse,
  leadDetailsResponse,
  leadListResponse,
  leadParams,
  listLeadsQuery,
  updateLeadBody,
} from './schemas';

const tags = ['Leads'];

/** The lead routes: imports, reads, edits and erasure. */
export const leadRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const { db, commands } = deps;
  await app.register(leadImportRoutes, deps);

  /** Runs a command on one lead, found by its (normalized) phone in the caller's account. */
  function onLead(
    request: FastifyRequest,
    accountId: string,
    phone: string,
    command: (lead: Lead) => LeadCommand,
  ) {
    return executeOnAccount(commands, request, accountId, async (trx) => {
      const row = await findLeadRow(trx, accountId, phone);
      if (!row) throw notFound('lead');
      const lead = toLead(row);
      const leadCommand = command(lead);
      const wantedExternalId = leadCommand.type === 'UpdateLead' ? leadCommand.fields.external_id : undefined;
      const owner = wantedExternalId
        ? await trx
            .selectFrom('leads')
            .select('id')
            .where('account_id', '=', accountId)
            .where('external_id', '=', wantedExternalId)
            .executeTakeFirst()
        : undefined;
      return { events: decideLead(leadCommand, { lead, externalIdOwner: owner?.id }), result: lead };
    });
  }

  app.get(
    '/accounts/:id/leads',
    {
      schema: {
        tags,
        operationId: 'listLeads',
        summary: 'List leads',
        description:
          "The account's leads, newest first; filter by `status`, `source` or a `search` on name, email or phone.",
        params: accountParams,
        querystring: listLeadsQuery,
        response: { 200: leadListResponse },
      },
    },
    async (request) => {
      const account = await requireAccount(db, request, request.params.id);
      const { leads, total } = await listLeads(db, account.id, request.query);
      return { leads, total, limit: request.query.limit, offset: request.query.offset };
    },
  );

  app.get(
    '/accounts/:id/leads/:phone',
    {
      schema: {
        tags,
        operationId: 'getLead',
        summary: 'Get a lead',
        description: 'The lead with its checklist, conversation and sequence enrollment.',
        params: leadParams,
        response: { 200: leadDetailsResponse },
      },
    },
    async (request) => {
      const account = await requireAccount(db, request, request.params.id);
      const row = await findLeadRow(db, account.id, request.params.phone);
      if (!row) throw notFound('lead');
      return leadDetails(db, row, deps.documentLinks);
    },
  );

  app.patch(
    '/accounts/:id/leads/:phone',
    {
      schema: {
        tags,
        operationId: 'updateLead',
        summary: 'Update a lead',
        description:
          'Returns the lead details after the change. A status change emits `lead.status_changed`.',
        params: leadParams,
        body: updateLeadBody,
        response: { 200: leadDetailsResponse },
      },
    },
    async (request) => {
      const { id, phone } = request.params;
      const { status, auto_sequence, metadata, ...fields } = request.body;
      await onLead(request, id, phone, () => ({
        type: 'UpdateLead',
        fields,
        metadata,
        auto_sequence,
        status,
      }));
      const row = await findLeadRow(db, id, phone);
      if (!row) throw notFound('lead');
      return leadDetails(db, row, deps.documentLinks);
    },
  );

  app.delete(
    '/accounts/:id/leads/:phone',
    {
      schema: {
        tags,
        operationId: 'deleteLead',
        summary: 'Delete a lead',
        description:
          'Removes the lead with its checklist progress and sequence enrollment; its conversation is kept.',
        params: leadParams,
        response: { 200: deletedResponse },
      },
    },
    async (request) => {
      await onLead(request, request.params.id, request.params.phone, () => ({ type: 'DeleteLead' }));
      return { success: true as const, deleted: true as const };
    },
  );

  // Before the checklist route: the OpenAPI document, and the clients generated from it, keep their order.
  await app.register(leadErasureRoutes, deps);

  app.get(
    '/accounts/:id/leads/:phone/checklist',
    {
      schema: {
        tags,
        operationId: 'getLeadChecklist',
        summary: "Get a lead's checklist",
        description: "Every requirement of the account with the lead's progress on it.",
        params: leadParams,
        response: { 200: checklistResponse },
      },
    },
    async (request) => {
      const account = await requireAccount(db, request, request.params.id);
      const row = await findLeadRow(db, account.id, request.params.phone);
      if (!row) throw notFound('lead');
      return leadChecklist(db, account.id, row.id, deps.documentLinks);
    },
  );
};
