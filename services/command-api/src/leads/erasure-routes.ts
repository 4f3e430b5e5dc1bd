import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { executeOnAccount } from '../accounts/account-stream';
import type { AppDeps } from '../app-deps';
import { decideErasureOf, purgeOperationalRecords } from './erasure';
import { erasedResponse, leadParams } from './schemas';

const tags = ['Leads'];

export const leadErasureRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const { db, commands } = deps;

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
          'over as a new person, with one exception: an opt-out outlives the erasure. The law requires ' +
          'honouring a STOP for good (TCPA, CTIA) and allows keeping what that needs (GDPR art. 17(3)(b)), ' +
          'so when the person had opted out, a keyed hash of the number (never the number) is kept with the ' +
          "opt-out's time. Imported again (one by one or in bulk), texting again or enrolled, the number " +
          'is opted out: the lead and its conversation show `opted_out: true`, messages to it are a 409 ' +
          '`lead_opted_out`, `auto_sequence` does not enroll it and no sequence step or AI message goes to ' +
          'it, until it texts START.',
        params: leadParams,
        response: { 200: erasedResponse },
      },
    },
    async (request) => {
      const { id: accountId, phone } = request.params;
      const { events, result } = await executeOnAccount(
        commands,
        request,
        accountId,
        async (trx) => {
          const { subject, decision } = await decideErasureOf(trx, deps.personalDataKeys, accountId, phone);
          return { events: decision.events, result: { subject, decision } };
        },
        { onErased: 'proceed' },
      );
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
      await purgeOperationalRecords(db, request.partner.id, [phone, ...(leadId ? [leadId] : [])]);
      return {
        success: true as const,
        lead_id: leadId,
        erased: true as const,
        erased_at: erased.occurred_at,
      };
    },
  );
};
