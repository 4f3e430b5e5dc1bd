import { notFound } from '@leadline/runtime';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { findLeadRow, enrollState } from '@leadline/decision-state';
import { decideEnroll, decideUnenroll } from '@leadline/domain';
import { executeOnAccount, requireAccount } from '../accounts/account-stream';
import type { AppDeps } from '../app-deps';
import { leadParams } from '../leads/schemas';
import { leadEnrollments } from './queries';
import {
  enrollBody,
  enrollResponse,
  leadEnrollmentsResponse,
  sequenceParams,
  unenrollResponse,
} from './schemas';

const tags = ['Sequences'];

/** A lead's place in the account's sequences: enroll, list its enrollments, take it out. */
export const enrollmentRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const { db, commands, clock, newId } = deps;
  const hourSeconds = deps.sequenceHourSeconds ?? 3600;

  app.post(
    '/accounts/:id/sequences/:sequence_id/enroll',
    {
      schema: {
        operationId: 'enrollLead',
        tags,
        summary: 'Enroll a lead',
        description:
          'Starts the sequence at step 0 (`enrolled`); a lead whose enrollment was cancelled, stopped by an opt-out ' +
          'or completed starts again (`reactivated`); an active one is left alone (`already_enrolled`). A step 0 ' +
          "with no delay goes out at once when the lead's sending window is open (`message_sent`); otherwise " +
          '`next_step_at` says when. 404 for an unknown lead, 409 `sequence_inactive`, `lead_opted_out` or ' +
          '`account_deactivated`.',
        params: sequenceParams,
        body: enrollBody,
        response: { 200: enrollResponse },
      },
    },
    async (request) => {
      const { id, sequence_id } = request.params;
      const ids = { enrollment_id: newId(), message_id: newId() };
      const { result } = await executeOnAccount(commands, request, id, async (trx, account) => {
        const now = clock.now();
        const state = await enrollState(
          trx,
          deps.personalDataKeys,
          account,
          sequence_id,
          request.body.phone,
          now,
        );
        return decideEnroll(ids, state, { now, hourSeconds });
      });
      return { success: true as const, ...result };
    },
  );

  app.get(
    '/accounts/:id/leads/:phone/sequences',
    {
      schema: {
        operationId: 'listLeadEnrollments',
        tags,
        summary: "List a lead's sequences",
        description:
          "Every sequence the lead is or was in, with the enrollment's state: the lead details' `sequence` " +
          'shows only the active one (else the latest). 404 for an unknown lead.',
        params: leadParams,
        response: { 200: leadEnrollmentsResponse },
      },
    },
    async (request) => {
      const account = await requireAccount(db, request, request.params.id);
      const lead = await findLeadRow(db, account.id, request.params.phone);
      if (!lead) throw notFound('lead');
      return { enrollments: await leadEnrollments(db, lead.id) };
    },
  );

  app.post(
    '/accounts/:id/sequences/:sequence_id/unenroll',
    {
      schema: {
        operationId: 'unenrollLead',
        tags,
        summary: 'Take a lead out of a sequence',
        description:
          "Ends the lead's active enrollment in the sequence (`unenrolled`; its `sequence.status` becomes " +
          '`cancelled`) and nothing more is sent from it; enrolling again starts over at step 0. A lead not in ' +
          'the sequence now is left alone (`not_enrolled`). 404 for an unknown sequence or lead.',
        params: sequenceParams,
        body: enrollBody,
        response: { 200: unenrollResponse },
      },
    },
    async (request) => {
      const { id, sequence_id } = request.params;
      const { result } = await executeOnAccount(commands, request, id, async (trx, account) =>
        decideUnenroll(
          await enrollState(
            trx,
            deps.personalDataKeys,
            account,
            sequence_id,
            request.body.phone,
            clock.now(),
          ),
        ),
      );
      return { success: true as const, ...result };
    },
  );
};
