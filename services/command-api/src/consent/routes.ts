import { consentStatuses, findLeadRow, recordedGrants } from '@leadline/decision-state';
import { decideConsentGrants } from '@leadline/domain';
import { notFound } from '@leadline/runtime';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { executeOnAccount, requireAccount } from '../accounts/account-stream';
import { accountParams } from '../accounts/schemas';
import type { AppDeps } from '../app-deps';
import { leadParams } from '../leads/schemas';
import { exportStream } from './export';
import { consentRecordPages, consentTrail, findConsentRecord, findGrantId } from './queries';
import {
  consentExportQuery,
  consentGrantBody,
  consentGrantResponse,
  consentRecordResponse,
  consentTrailQuery,
  consentTrailResponse,
  toConsentGrant,
} from './schemas';

const tags = ['Consent'];

/** Rows read per query of an export: one page is what an export holds in memory at once. */
export const EXPORT_PAGE_SIZE = 500;

/**
 * Proof of consent: a lead's consent trail and its grants, and the export of an account's records
 * for a dispute. Grants are decided on the account's decide-and-append path, like every write that
 * changes what a decision reads (a grant releases the sequence steps held for it).
 */
export const consentRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const { db, commands, clock, newId } = deps;

  app.post(
    '/accounts/:id/leads/:phone/consent',
    {
      schema: {
        tags,
        operationId: 'grantConsent',
        summary: 'Record consent',
        description:
          "Records that the lead agreed to be texted, with its evidence, as a `granted` record of the lead's " +
          'consent trail (201). The same grant again (every field equal) records nothing and answers 200 with ' +
          "the grant it repeats. Where the account has `consent_required`, the lead's sequence steps held for " +
          'consent (`hold_reason: no_consent`) go out at once, inside its sending window. Consent is kept with ' +
          "the phone number: it outlives the lead's deletion, as an opt-out does. A grant does not lift an " +
          'opt-out: only the lead texting START does.',
        params: leadParams,
        body: consentGrantBody,
        response: { 200: consentGrantResponse, 201: consentGrantResponse },
      },
    },
    async (request, reply) => {
      const { id, phone } = request.params;
      const grant = toConsentGrant(request.body);
      const { events, result } = await executeOnAccount(commands, request, id, async (trx) => {
        const lead = await findLeadRow(trx, id, phone);
        if (!lead) throw notFound('lead');
        const decision = decideConsentGrants(
          [{ phone: lead.phone, lead_id: lead.id, grant, field: 'body' }],
          await recordedGrants(trx, id, [lead.phone]),
          { newId, now: clock.now(), via: 'api' },
        );
        return { events: decision.events, result: decision.recorded[0]! };
      });
      const granted = events.find((event) => event.type === 'lead.consent_granted');
      const recordId =
        granted?.type === 'lead.consent_granted'
          ? granted.data.consent_id
          : await findGrantId(db, id, phone, grant);
      const [record, statuses] = await Promise.all([
        recordId ? findConsentRecord(db, id, recordId) : undefined,
        consentStatuses(db, id, [phone]),
      ]);
      if (!record) throw notFound('lead');
      return reply.status(result ? 201 : 200).send({
        success: true as const,
        recorded: result,
        status: statuses.get(phone) ?? 'none',
        record,
      });
    },
  );

  app.get(
    '/accounts/:id/leads/:phone/consent',
    {
      schema: {
        tags,
        operationId: 'getConsentTrail',
        summary: "Get a lead's consent trail",
        description:
          "The lead's consent status and every record of its trail, in the order they happened: the grants " +
          'you recorded (on import or by `POST …/consent`), each opt-out the lead texted (a revocation, with ' +
          'the message that revoked it) and each START (a grant by `sms_keyword`). 404 for an unknown lead.',
        params: leadParams,
        querystring: consentTrailQuery,
        response: { 200: consentTrailResponse },
      },
    },
    async (request) => {
      const account = await requireAccount(db, request, request.params.id);
      const lead = await findLeadRow(db, account.id, request.params.phone);
      if (!lead) throw notFound('lead');
      const trail = await consentTrail(db, account.id, lead.phone, request.query);
      return {
        phone: lead.phone,
        status: trail.status,
        consent_required: account.consent_required,
        opted_out: trail.opted_out,
        records: trail.records,
        total: trail.total,
        limit: request.query.limit,
        offset: request.query.offset,
      };
    },
  );

  app.get(
    '/accounts/:id/consent/export',
    {
      schema: {
        tags,
        operationId: 'exportConsentRecords',
        summary: "Export an account's consent records",
        description:
          'Every consent record of the account recorded in [`from`, `to`), for an auditor or a dispute: grants ' +
          'with their evidence, texted revocations with the message, and START. Ordered by `recorded_at`, then ' +
          '`id`, and streamed as it is read, page by page, so an export of any size starts at once and ' +
          'is never held in memory. `to` defaults to the time of the request, so records arriving meanwhile ' +
          'do not move the export. NDJSON (one `ConsentRecord` a line) or CSV (RFC 4180, CRLF, a header row; ' +
          'the message as `message_id`, `message_body` and `message_received_at`; a text value others wrote ' +
          "that starts with `=`, `+`, `-`, `@`, a tab or a return is prefixed with `'` so no spreadsheet runs " +
          'it). A connection closed before the end is an incomplete export: ask again.',
        params: accountParams,
        querystring: consentExportQuery,
        response: {
          200: {
            description: 'The records, streamed.',
            content: {
              'application/x-ndjson': {
                schema: consentRecordResponse.describe('Each line is one record, as JSON.'),
              },
              'text/csv': {
                schema: z.string().describe('A header row, then one record per row.'),
              },
            },
          },
        },
      },
    },
    async (request, reply) => {
      const account = await requireAccount(db, request, request.params.id);
      const { from, to, format } = request.query;
      const range = { from: from ? new Date(from) : undefined, to: to ? new Date(to) : clock.now() };
      const pages = consentRecordPages(db, account.id, range, EXPORT_PAGE_SIZE);
      const name = `consent-${account.slug}-${range.to.toISOString().slice(0, 10)}.${format}`;
      return (
        reply
          .type(format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8')
          .header('content-disposition', `attachment; filename="${name}"`)
          .header('cache-control', 'no-store')
          // The schema describes each line; the answer is their stream (fastify pipes it, unserialized).
          .send(exportStream(pages, format) as never)
      );
    },
  );
};
