import { findRegistrationRow, toRegistration } from '@leadline/decision-state';
import { decideRegistrationSubmission } from '@leadline/domain';
import { queueRegistration } from '@leadline/runtime';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { executeOnAccount, requireAccount } from '../accounts/account-stream';
import type { AppDeps } from '../app-deps';
import { profileOf, toRegistrationResponse } from './queries';
import { registrationBody, registrationParams, registrationResponse } from './schemas';

const tags = ['Compliance'];

/**
 * The carriers' registration of an account's number (US A2P 10DLC): the partner submits the business
 * profile, the registration worker takes it through the provider step by step, and every change of a
 * step is an event (and a `compliance.status_changed` webhook).
 */
export const complianceRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const { db, commands, newId, clock } = deps;

  app.put(
    '/accounts/:id/compliance/registration',
    {
      schema: {
        tags,
        operationId: 'submitCarrierRegistration',
        summary: "Submit the account's carrier registration",
        description:
          "Submits the business behind the account for the carriers' registration of its number (US A2P " +
          '10DLC): business profile, brand, campaign, then the number joining the campaign. Idempotent: the ' +
          'same profile again changes nothing. Another profile is taken only before any submission (201) ' +
          'or once a step failed (200, every step starts again); while the carriers review it, or once they ' +
          'approved it, it is a 409. The tax id is stored encrypted and never answered in full. Where the ' +
          "carriers' rule is enforced, the account's US long code sends only opt-out confirmations and HELP " +
          'answers until the campaign is approved; its other messages wait and go once it is.',
        params: registrationParams,
        body: registrationBody,
        response: { 200: registrationResponse, 201: registrationResponse },
      },
    },
    async (request, reply) => {
      const accountId = request.params.id;
      const { tax_id: taxId, ...fields } = request.body;
      const profile = profileOf(fields);
      const submissionId = newId();
      const binding = { partnerId: request.partner.id, accountId, field: 'tax_id' as const };
      // Sealed before the lock: encryption needs nothing the decision reads.
      const ciphertext = deps.webhookSecrets.seal(taxId, binding);
      const { result: firstSubmission } = await executeOnAccount(
        commands,
        request,
        accountId,
        async (trx, account) => {
          const row = await findRegistrationRow(trx, accountId);
          const events = decideRegistrationSubmission(
            {
              type: 'SubmitRegistration',
              submission_id: submissionId,
              profile,
              tax_id: { value: taxId, last4: taxId.slice(-4), ciphertext },
            },
            {
              registration: row && toRegistration(row),
              currentTaxId: row && deps.webhookSecrets.open(row.tax_id_ciphertext, binding),
            },
          );
          // The worker's queue commits with the submission, or not at all.
          if (events.length > 0) {
            await queueRegistration(trx, {
              accountId,
              partnerId: account.partner_id,
              submissionId,
              at: clock.now(),
            });
          }
          return { events, result: row === undefined };
        },
      );
      const row = await findRegistrationRow(db, accountId);
      return reply.status(firstSubmission ? 201 : 200).send(toRegistrationResponse(accountId, row));
    },
  );

  app.get(
    '/accounts/:id/compliance/registration',
    {
      schema: {
        tags,
        operationId: 'getCarrierRegistration',
        summary: "Get the account's carrier registration",
        description:
          'Where each step of the registration stands: `draft`, `pending` (the carrier reviews it), ' +
          "`approved`, or `failed` with the carrier's reason. Before any submission, every step is a draft " +
          'and `profile` is null. The tax id shows only its last four digits.',
        params: registrationParams,
        response: { 200: registrationResponse },
      },
    },
    async (request) => {
      const accountId = request.params.id;
      await requireAccount(db, request, accountId);
      return toRegistrationResponse(accountId, await findRegistrationRow(db, accountId));
    },
  );
};
