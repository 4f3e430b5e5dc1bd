import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../app-deps';
import { eraseAccount } from './erasure';
import { accountErasedResponse, accountParams } from './schemas';

const tags = ['Accounts'];

/** An account erased on a privacy request: everyone it holds, its account kept. */
export const accountErasureRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  app.post(
    '/accounts/:id/erase',
    {
      schema: {
        tags,
        operationId: 'eraseAccount',
        summary: 'Erase an account (privacy request)',
        description:
          'For a deletion request covering everyone the account holds (the business leaving, a privacy ' +
          'law): deactivates the account, as DELETE does, and erases every person it holds as ' +
          'POST /accounts/{id}/leads/{phone}/erase erases one: each lead, each number that texted it without ' +
          'becoming one, each number its event log alone still knows, and the personal data of its invited ' +
          'team members. Every key that sealed their personal data on the log is destroyed, and every read ' +
          'model forgets them. A `lead.erased` webhook follows for each person, then `account.erased`. What ' +
          "stays: the account itself (its name, number and settings are the business's, not personal), so " +
          'GET /accounts/{id} still answers, with no leads; its usage counters keep their counts. Asking ' +
          'again answers 200 with the same `erased_at`, and erases whatever the account gained since (a ' +
          'deactivated account still takes imports and inbound messages). The people are erased a thousand ' +
          'at a time, and those who arrive meanwhile with them: a request that fails midway (a 503) may have ' +
          'erased some already, and asking again finishes the erasure.',
        params: accountParams,
        response: { 200: accountErasedResponse },
      },
    },
    async (request) => {
      const { id } = request.params;
      const { erasedAt, leadsErased } = await eraseAccount(deps, request, id);
      return {
        id,
        status: 'deactivated' as const,
        erased_at: erasedAt.toISOString(),
        leads_erased: leadsErased,
      };
    },
  );
};
