import { cleanForm } from '@leadline/events';
import { registrationDueNow } from '@leadline/runtime';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppDeps } from '../app-deps';

/** What we put in a Trust Hub profile's status callback URL: the account and the submission. */
const registrationCallbackQuery = z.object({
  account_id: z.string().min(1).max(100),
  submission_id: z.string().min(1).max(100),
});

/** Trust Hub's status callback form: the bundle and its new status (every field is signed). */
const registrationCallbackForm = z
  .object({ BundleSid: z.string().optional(), Status: z.string().optional() })
  .catchall(z.string());

/**
 * Trust Hub's status callbacks for the business and messaging profiles of a registration (signed like
 * every Twilio webhook, checked by the plugin registering this one). A callback only makes the
 * registration due: the worker reads the profile's status from Twilio, with its reasons, outside any
 * lock, and records it as an event; a lost callback is made up by the worker's own looks.
 */
export const registrationCallbackRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  app.post(
    '/twilio/registration',
    { schema: { hide: true, body: registrationCallbackForm, querystring: registrationCallbackQuery } },
    async (request, reply) => {
      const query = cleanForm(request.query);
      const waiting = await registrationDueNow(deps.db, {
        accountId: query.account_id,
        submissionId: query.submission_id,
        at: deps.clock.now(),
      });
      request.log.info(
        {
          account_id: query.account_id,
          bundle_sid: request.body.BundleSid,
          status: request.body.Status,
          waiting,
        },
        'registration status callback',
      );
      // Answered either way: a callback about a submission replaced since has nothing to wake.
      return reply.status(204).send();
    },
  );
};
