import { createKeyedBatcher, DomainError, notFound } from '@leadline/runtime';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import {
  decideLead,
  decideLeadImports,
  type Lead,
  type LeadCommand,
  type LeadImport,
  consentGrantProblem,
  decideAutoEnrollments,
  decideConsentGrants,
  type ConsentGrant,
} from '@leadline/domain';
import {
  autoEnrollState,
  findLeadRow,
  leadsMatching,
  recordedGrants,
  toLead,
} from '@leadline/decision-state';
import { toConsentGrant } from '../consent/schemas';
import { executeOnAccount, requireAccount } from '../accounts/account-stream';
import { commandContext } from '../http/auth';
import { accountParams } from '../accounts/schemas';
import type { AppDeps } from '../app-deps';
import { decideErasureOf, purgeOperationalRecords } from './erasure';
import { leadChecklist, leadDetails, listLeads } from './queries';
import {
  BULK_BODY_LIMIT,
  bulkImportBody,
  bulkImportResponse,
  checklistResponse,
  deletedResponse,
  erasedResponse,
  importResponse,
  leadDetailsResponse,
  leadImportBody,
  leadListResponse,
  leadParams,
  listLeadsQuery,
  updateLeadBody,
} from './schemas';

const tags = ['Leads'];

/** The most single imports into one account decided in one command. */
const SINGLE_IMPORTS_PER_COMMAND = 100;

type BulkError = z.infer<typeof bulkImportResponse>['errors'][number];

function importedLead(lead: Lead, sequenceEnrolled: boolean): z.infer<typeof importResponse>['lead'] {
  const { phone, name, email, source, external_id, status, created_at } = lead;
  return { phone, name, email, source, external_id, status, sequence_enrolled: sequenceEnrolled, created_at };
}

/** A validated lead import, with the consent it records if it carries one. */
type ImportEntry = LeadImport & { consent?: z.infer<typeof leadImportBody>['consent'] };

/**
 * Each bulk entry is validated on its own; the invalid ones become `errors` entries. A consent given
 * in the future (by `now`) is invalid like a malformed field.
 */
function validateBulk(
  entries: readonly unknown[],
  now: Date,
): {
  valid: { index: number; lead: ImportEntry }[];
  errors: BulkError[];
} {
  const valid: { index: number; lead: ImportEntry }[] = [];
  const errors: BulkError[] = [];
  entries.forEach((entry, index) => {
    const parsed = leadImportBody.safeParse(entry);
    const consentProblem =
      parsed.success && parsed.data.consent && consentGrantProblem(parsed.data.consent, now);
    if (parsed.success && consentProblem) {
      errors.push({
        index,
        phone: (entry as { phone: string }).phone,
        code: 'validation_failed',
        message: `consent.captured_at: ${consentProblem}`,
      });
      return;
    }
    if (parsed.success) {
      valid.push({ index, lead: parsed.data });
      return;
    }
    const sentPhone = (entry as { phone?: unknown } | null)?.phone;
    const issue = parsed.error.issues[0]!;
    const field = issue.path.join('.') || 'lead';
    errors.push({
      index,
      phone: typeof sentPhone === 'string' ? sentPhone : null,
      code: field === 'phone' ? 'invalid_phone' : 'validation_failed',
      message: `${field}: ${issue.message}`,
    });
  });
  return { valid, errors };
}

export const leadRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const { db, commands, clock, newId } = deps;
  const hourSeconds = deps.sequenceHourSeconds ?? 3600;

  /** One request's leads, decided in its turn and traced to it. */
  interface ImportRequest {
    request: FastifyRequest;
    accountId: string;
    leads: ImportEntry[];
    origin: 'api' | 'bulk';
  }
  type ImportOutcome = ReturnType<typeof decideLeadImports>['outcomes'][number] & {
    sequence_enrolled: boolean;
    consent_recorded: boolean;
  };

  /**
   * The consents the imports carry, recorded for the phone each was given with (a lead matched by
   * `external_id` under another phone is not that number's lead). One request's grants after another's,
   * so the same grant twice in a batch is recorded once.
   */
  async function decideImportConsents(
    trx: Parameters<typeof recordedGrants>[0],
    accountId: string,
    requests: readonly ImportRequest[],
    outcomes: readonly (readonly { lead: Lead }[])[],
    now: Date,
  ) {
    const phones = requests.flatMap(({ leads }) =>
      leads.flatMap((lead) => (lead.consent ? [lead.phone] : [])),
    );
    const known =
      phones.length > 0 ? await recordedGrants(trx, accountId, phones) : new Map<string, ConsentGrant[]>();
    return requests.map(({ request, leads, origin }, index) => {
      const grants = leads.flatMap((entry, position) => {
        if (!entry.consent) return [];
        const { lead } = outcomes[index]![position]!;
        return [
          {
            position,
            phone: entry.phone,
            lead_id: lead.phone === entry.phone ? lead.lead_id : null,
            grant: toConsentGrant(entry.consent),
            field: origin === 'bulk' ? `body.leads.${position}.consent` : 'body.consent',
          },
        ];
      });
      const decision = decideConsentGrants(grants, known, {
        newId,
        now,
        via: origin === 'bulk' ? 'bulk_import' : 'import',
      });
      grants.forEach(({ phone, grant }, at) => {
        if (decision.recorded[at]) known.set(phone, [...(known.get(phone) ?? []), grant]);
      });
      const recorded = new Set(
        grants.filter((_, at) => decision.recorded[at]).map(({ position }) => position),
      );
      const { correlationId } = commandContext(request);
      return {
        events: decision.events.map((event) => ({ ...event, correlationId })),
        recorded: leads.map((_, position) => recorded.has(position)),
      };
    });
  }

  /**
   * Decides imports into one account against its caught-up leads in one command, each request in turn
   * against the leads as the requests before it left them, and appends them as one batch. Each
   * request's events carry its own correlation id; its outcomes come back in its place.
   */
  async function importLeads(accountId: string, requests: readonly ImportRequest[]) {
    const { result } = await executeOnAccount(
      commands,
      requests[0]!.request,
      accountId,
      async (trx, account) => {
        const all = requests.flatMap((entry) => entry.leads);
        const matching = await leadsMatching(
          trx,
          accountId,
          all.map((lead) => lead.phone),
          all.flatMap((lead) => (lead.external_id ? [lead.external_id] : [])),
        );
        const known = new Map(matching.map((lead) => [lead.lead_id, lead]));
        const now = clock.now();
        const decisions = requests.map(({ request, leads, origin }) => {
          const decision = decideLeadImports(leads, [...known.values()], { newId, now, origin });
          for (const { lead } of decision.outcomes) known.set(lead.lead_id, lead);
          const { correlationId } = commandContext(request);
          return { ...decision, events: decision.events.map((event) => ({ ...event, correlationId })) };
        });
        const imported = decisions.flatMap(({ outcomes }, index) =>
          outcomes.map((outcome, position) => ({
            outcome,
            lead: outcome.lead,
            auto_sequence: requests[index]!.leads[position]!.auto_sequence,
          })),
        );
        // Only `auto_sequence` enrolls a lead, and a lead created now is in no sequence yet: an import of
        // new leads without it needs none of the sequences' state (three reads fewer under the lock).
        const needsSequences = imported.some(
          ({ outcome, auto_sequence }) => outcome.action !== 'created' || auto_sequence,
        );
        const enrollments = needsSequences
          ? decideAutoEnrollments(
              imported,
              await autoEnrollState(
                trx,
                account,
                imported.map(({ lead }) => lead),
              ),
              { now, hourSeconds, newId },
            )
          : { events: [], inSequence: new Set<string>() };
        const consents = await decideImportConsents(
          trx,
          accountId,
          requests,
          decisions.map((decision) => decision.outcomes),
          now,
        );
        const outcomes = decisions.map((decision, index) =>
          decision.outcomes.map((outcome, position): ImportOutcome => ({
            ...outcome,
            sequence_enrolled: enrollments.inSequence.has(outcome.lead.lead_id),
            consent_recorded: consents[index]!.recorded[position]!,
          })),
        );
        return {
          // The leads first (a grant names its lead), then their consents, then the enrollments.
          events: [
            ...decisions.flatMap((decision) => decision.events),
            ...consents.flatMap((consent) => consent.events),
            ...enrollments.events,
          ],
          result: outcomes,
        };
      },
    );
    return result;
  }

  /**
   * Single imports into one account that arrive while a command of theirs runs are decided together in
   * the next one (group commit): one lock, one high-watermark check, one append and one wait for the
   * projector for all of them, still decided in arrival order. Only requests whose events name the same
   * actor share a command (its context is the first one's), and an `auto_sequence` import goes alone,
   * so the enrollment it appends is traced to it. A command that fails fails each of its requests.
   */
  const importSingle = createKeyedBatcher<ImportRequest, ImportOutcome>({
    keyOf: ({ request, accountId }) => {
      const { partnerId, actor } = commandContext(request);
      return JSON.stringify([accountId, partnerId, actor]);
    },
    conflicts: (a, b) => a.leads[0]!.auto_sequence || b.leads[0]!.auto_sequence,
    maxBatch: SINGLE_IMPORTS_PER_COMMAND,
    run: async (_key, requests) =>
      (await importLeads(requests[0]!.accountId, requests)).map(([outcome]) => outcome!),
  });

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

  app.post(
    '/accounts/:id/leads/:phone/erase',
    {
      schema: {
        tags,
        operationId: 'eraseLead',
        summary: 'Erase a person (privacy request)',
        description:
          'For a deletion request under a privacy law (CCPA, GDPR, a state law): forgets the person behind ' +
          'the phone, whether or not the number still has a lead. The key that sealed their personal data on ' +
          'the event log is destroyed, so every copy of the log (replays, backups, analysts) reads those ' +
          'values as erased from then on, and every read model drops the lead, its checklist values, its ' +
          'conversation and messages, its consent trail, its sequence enrollments and its documents (bytes ' +
          'included); stored answers of idempotent requests about it are dropped too. What stays: the ' +
          "account's usage counters keep their counts (billing), and the log keeps the facts that " +
          'something happened, with ids and times but without the personal values. A `lead.erased` webhook ' +
          'follows, carrying the lead id only. Asking again answers 200 with the time of the erasure; a ' +
          'phone the account never had is a 404. A number that texts the account after its erasure starts ' +
          'over as a new person.',
        params: leadParams,
        response: { 200: erasedResponse },
      },
    },
    async (request) => {
      const { id: accountId, phone } = request.params;
      const { events, result } = await executeOnAccount(commands, request, accountId, async (trx) => {
        const { subject, decision } = await decideErasureOf(trx, deps.personalDataKeys, accountId, phone);
        return { events: decision.events, result: { subject, decision } };
      });
      const { subject, decision } = result;
      if (decision.action === 'already_erased') {
        return {
          success: true as const,
          lead_id: null,
          erased: true as const,
          erased_at: decision.erasedAt.toISOString(),
        };
      }
      // After the append: were this process to die here, the request fails and the key stays live;
      // asking again finds it live and erases again (both steps are idempotent). Consumers never destroy
      // keys: one replaying old history would destroy the key of a person who came back since.
      const erased = events[0]!;
      await deps.personalDataKeys.eraseSubject(accountId, subject, new Date(erased.occurred_at));
      const leadId = erased.type === 'lead.erased' ? erased.data.lead_id : null;
      await purgeOperationalRecords(db, request.partner.id, phone, leadId);
      return {
        success: true as const,
        lead_id: leadId,
        erased: true as const,
        erased_at: erased.occurred_at,
      };
    },
  );

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
