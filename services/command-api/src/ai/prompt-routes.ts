import { promptInputSelections, toPromptInput } from '@leadline/decision-state';
import { composeSystemPrompt, defaultPromptSettings, normalizePhone } from '@leadline/domain';
import { DomainError, notFound, type Database } from '@leadline/runtime';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Kysely } from 'kysely';
import { executeOnAccount, requireAccount, type AccountRow } from '../accounts/account-stream';
import { accountParams } from '../accounts/schemas';
import type { AppDeps } from '../app-deps';
import { promptQuery, promptSettingsBody, promptSettingsResponse } from './schemas';

const tags = ['AI configuration'];

const badRequest = (code: string, message: string) => new DomainError(400, code, message);

/** The stored settings (defaults until first saved) and the prompt they compose, in one statement. */
async function promptSettingsOf(
  db: Kysely<Database>,
  account: Pick<AccountRow, 'id' | 'company_name'>,
  phone?: string,
) {
  const reads = await db
    .selectNoFrom((eb) => [
      ...promptInputSelections(eb, account.id, phone),
      eb
        .selectFrom('ai_prompt_settings')
        .select('updated_at')
        .where('account_id', '=', account.id)
        .as('updated_at'),
    ])
    .executeTakeFirstOrThrow();
  const { input, lead } = toPromptInput(account, reads);
  if (phone && !lead) throw notFound('lead');
  const shown = reads.settings ?? defaultPromptSettings;
  return {
    mode: shown.mode,
    role_persona: shown.role_persona,
    tone_voice: shown.tone_voice,
    response_style: shown.response_style,
    conversation_rules: shown.conversation_rules,
    special_instructions: shown.special_instructions,
    system_prompt: shown.system_prompt,
    composed_system_prompt: composeSystemPrompt(input),
    updated_at: reads.updated_at?.toISOString() ?? null,
  };
}

/** The AI's prompt: the stored settings and the system prompt they compose. */
export const promptRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { db, commands }) => {
  app.get(
    '/accounts/:id/settings/prompt',
    {
      schema: {
        operationId: 'getPromptSettings',
        tags,
        summary: 'Get the AI prompt settings',
        description:
          'The stored settings (defaults until first saved) and `composed_system_prompt`, the system prompt exactly as the model sees it. With `phone`, composed for that lead.',
        params: accountParams,
        querystring: promptQuery,
        response: { 200: promptSettingsResponse },
      },
    },
    async (request) => {
      const account = await requireAccount(db, request, request.params.id);
      const phone = request.query.phone === undefined ? undefined : normalizePhone(request.query.phone);
      if (request.query.phone !== undefined && !phone)
        throw badRequest('invalid_phone', 'Not a phone number.');
      return promptSettingsOf(db, account, phone);
    },
  );

  app.patch(
    '/accounts/:id/settings/prompt',
    {
      schema: {
        operationId: 'updatePromptSettings',
        tags,
        summary: 'Set the AI prompt',
        description:
          "`guided`: the five optional fields are combined into the prompt; a field left out keeps its stored guided value, null clears it. `advanced`: `system_prompt` replaces the composition. In both modes the channel rules, the checklist and the company context are appended. `{{company}}` is replaced by the account's company name. Answers the settings as GET does.",
        params: accountParams,
        body: promptSettingsBody,
        response: { 200: promptSettingsResponse },
      },
    },
    async (request) => {
      const body = request.body;
      // Answered with the account the command read, not read again.
      const saved = await executeOnAccount(commands, request, request.params.id, async (trx, account) => {
        const stored = await trx
          .selectFrom('ai_prompt_settings')
          .selectAll()
          .where('account_id', '=', account.id)
          .executeTakeFirst();
        if (body.mode === 'advanced') {
          return {
            events: [
              { type: 'ai.prompt_updated', data: { mode: 'advanced', system_prompt: body.system_prompt } },
            ],
            result: account,
          };
        }
        const previous = stored?.mode === 'guided' ? stored : defaultPromptSettings;
        const pick = <
          K extends
            'role_persona' | 'tone_voice' | 'response_style' | 'conversation_rules' | 'special_instructions',
        >(
          field: K,
        ) => (body[field] === undefined ? previous[field] : body[field]);
        return {
          events: [
            {
              type: 'ai.prompt_updated',
              data: {
                mode: 'guided',
                role_persona: pick('role_persona'),
                tone_voice: pick('tone_voice'),
                response_style: pick('response_style'),
                conversation_rules: pick('conversation_rules'),
                special_instructions: pick('special_instructions'),
              },
            },
          ],
          result: account,
        };
      });
      return promptSettingsOf(db, saved.result);
    },
  );
};
