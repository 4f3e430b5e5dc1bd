import { DomainError } from '@leadline/runtime';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { consentGrantProblem } from '@leadline/domain';
import { requireAccount } from '../accounts/account-stream';
import { accountParams } from '../accounts/schemas';
import type { AppDeps } from '../app-deps';
import { createLeadImports, importedLead, validateBulk } from './import';
import {
  BULK_BODY_LIMIT,
  bulkImportBody,
  bulkImportResponse,
  importResponse,
  leadImportBody,
} from './schemas';

const tags = ['Leads'];

export const leadImportRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const { db, clock } = deps;
  const { importLeads, importSingle } = createLeadImports(deps);

  app.post(
    '/accounts/:id/leads',
    {
      schema: {
        tags,
        operationId: 'importLead',
        summary: 'Import a lead',
        description:
          'Deduplicated by phone, then by external_id: an existing lead keeps its fields and only has empty ' +
          'ones filled (`updated`, 200), or is left as it is (`skipped`, 200). A new lead is `created` (201). ' +
          "A `consent` is recorded in the lead's consent trail whatever happens to its fields (`consent_recorded`).",
        params: accountParams,
        body: leadImportBody,
        response: { 200: importResponse, 201: importResponse },
      },
    },
    async (request, reply) => {
      // Checked before the request joins others in a command: one bad consent must not fail theirs.
      const consentProblem = request.body.consent && consentGrantProblem(request.body.consent, clock.now());
      if (consentProblem) {
        throw new DomainError(400, 'validation_failed', 'The request is not valid.', {
          errors: [{ field: 'body.consent.captured_at', message: consentProblem }],
        });
      }
      const { action, lead, sequence_enrolled, consent_recorded } = await importSingle({
        request,
        accountId: request.params.id,
        leads: [request.body],
        origin: 'api',
      });
      return reply
        .status(action === 'created' ? 201 : 200)
        .send({ success: true, action, consent_recorded, lead: importedLead(lead, sequence_enrolled) });
    },
  );

  app.post(
    '/accounts/:id/leads/bulk',
    {
      // 1,000 leads with every field at its longest (ASCII) and 16 KB of metadata each are 22 MB.
      bodyLimit: BULK_BODY_LIMIT,
      schema: {
        tags,
        operationId: 'importLeads',
        summary: 'Import up to 1,000 leads',
        description:
          'Decided together and appended as one batch. Invalid leads are reported in `errors` ' +
          '(`{index, phone, code, message}`) while the valid ones are imported; duplicates, including ' +
          'duplicates inside the request, count as updated or skipped. More than 1,000 is a 400 that imports nothing. ' +
          'The body may be up to 24 MB (every field of 1,000 leads at its longest).',
        params: accountParams,
        body: bulkImportBody,
        response: { 200: bulkImportResponse },
      },
    },
    async (request) => {
      const { valid, errors } = validateBulk(request.body.leads, clock.now());
      const leads = valid.map((entry) => entry.lead);
      // With nothing valid to import there is no command, but the account must still be the caller's.
      const outcomes =
        leads.length > 0
          ? (
              await importLeads(request.params.id, [
                { request, accountId: request.params.id, leads, origin: 'bulk' },
              ])
            )[0]!
          : await requireAccount(db, request, request.params.id).then(() => []);
      const count = (action: string) => outcomes.filter((outcome) => outcome.action === action).length;
      return {
        success: true as const,
        imported: count('created'),
        updated: count('updated'),
        skipped: count('skipped'),
        consents_recorded: outcomes.filter((outcome) => outcome.consent_recorded).length,
        errors,
      };
    },
  );
};
