import { createKeyedBatcher } from '@leadline/runtime';
import type { FastifyRequest } from 'fastify';
import type { z } from 'zod';
import {
  consentGrantProblem,
  decideAutoEnrollments,
  decideConsentGrants,
  decideLeadImports,
  type ConsentGrant,
  type Lead,
  type LeadImport,
} from '@leadline/domain';
import { autoEnrollState, leadsMatching, recordedGrants } from '@leadline/decision-state';
import { toConsentGrant } from '../consent/schemas';
import { executeOnAccount } from '../accounts/account-stream';
import { commandContext } from '../http/auth';
import type { AppDeps } from '../app-deps';
import { leadImportBody, type bulkImportResponse, type importResponse } from './schemas';

/** The most single imports into one account decided in one command. */
const SINGLE_IMPORTS_PER_COMMAND = 100;

type BulkError = z.infer<typeof bulkImportResponse>['errors'][number];

export function importedLead(lead: Lead, sequenceEnrolled: boolean): z.infer<typeof importResponse>['lead'] {
  const { phone, name, email, source, external_id, status, created_at } = lead;
  return { phone, name, email, source, external_id, status, sequence_enrolled: sequenceEnrolled, created_at };
}

/** A validated lead import, with the consent it records if it carries one. */
export type ImportEntry = LeadImport & { consent?: z.infer<typeof leadImportBody>['consent'] };

/**
 * Each bulk entry is validated on its own; the invalid ones become `errors` entries. A consent given
 * in the future (by `now`) is invalid like a malformed field.
 */
export function validateBulk(
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
  newId: AppDeps['newId'],
  accountId: string,
  requests: readonly ImportRequest[],
  outcomes: readonly (readonly { lead: Lead }[])[],
  now: Date,
) {
  const phones = requests.flatMap(({ leads }) => leads.flatMap((lead) => (lead.consent ? [lead.phone] : [])));
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
    const recorded = new Set(grants.filter((_, at) => decision.recorded[at]).map(({ position }) => position));
    const { correlationId } = commandContext(request);
    return {
      events: decision.events.map((event) => ({ ...event, correlationId })),
      recorded: leads.map((_, position) => recorded.has(position)),
    };
  });
}

/**
 * How the import routes decide: a bulk request in one command, single imports into one account that
 * arrive together in a shared one.
 */
export function createLeadImports(deps: AppDeps) {
  const { commands, clock, newId } = deps;
  const hourSeconds = deps.sequenceHourSeconds ?? 3600;

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
                deps.personalDataKeys,
                account,
                imported.map(({ lead }) => lead),
              ),
              { now, hourSeconds, newId },
            )
          : { events: [], inSequence: new Set<string>() };
        const consents = await decideImportConsents(
          trx,
          newId,
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

  return { importLeads, importSingle };
}
