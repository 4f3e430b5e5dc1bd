import { ai, type DomainEvent } from '@leadline/events';
import { isErased } from '@leadline/runtime';
import { defineProjection } from '../projection';

/** The AI's handled turns (so none is handled twice), the conversation summary and prompt settings. */
export const aiProjection = defineProjection(
  'ai',
  [
    'ai.turn_completed',
    'ai.prompt_updated',
    'context_file.uploaded',
    'context_file.deleted',
    'context_url.added',
    'context_url.fetched',
    'context_url.fetch_failed',
    'context_url.deleted',
  ],
  async (trx, events) => {
    for (const event of events) {
      switch (event.type) {
        case 'ai.turn_completed': {
          const { data } = event;
          const keys = ai.turnKeys(data);
          await trx
            .insertInto('ai_handled_turns')
            .values(
              keys.map((turn_key) => ({
                account_id: event.account_id,
                turn_key,
                outcome: data.outcome,
                handled_at: event.occurred_at,
              })),
            )
            .onConflict((oc) => oc.doNothing())
            .execute();
          if (data.summary !== null) {
            // A summary the account's retention expired (its day's key destroyed) is gone, as the pass
            // left it (see retention.ts): a rebuild ends where the live read model is.
            const expired = isErased(data.summary);
            await trx
              .updateTable('conversations')
              .set({
                summary: expired ? null : data.summary,
                summary_at: expired ? null : event.occurred_at,
              })
              .where('account_id', '=', event.account_id)
              .where('phone', '=', data.phone)
              .execute();
          }
          break;
        }
        case 'ai.prompt_updated': {
          const { data } = event;
          const row = {
            mode: data.mode,
            role_persona: data.mode === 'guided' ? data.role_persona : null,
            tone_voice: data.mode === 'guided' ? data.tone_voice : null,
            response_style: data.mode === 'guided' ? data.response_style : null,
            conversation_rules: data.mode === 'guided' ? data.conversation_rules : null,
            special_instructions: data.mode === 'guided' ? data.special_instructions : null,
            system_prompt: data.mode === 'advanced' ? data.system_prompt : null,
            updated_at: event.occurred_at,
          };
          await trx
            .insertInto('ai_prompt_settings')
            .values({ account_id: event.account_id, ...row })
            .onConflict((oc) => oc.column('account_id').doUpdateSet(row))
            .execute();
          break;
        }
        case 'context_file.uploaded': {
          const { data } = event;
          await trx
            .insertInto('context_files')
            .values({
              id: data.file_id,
              account_id: event.account_id,
              name: data.name,
              file_type: data.file_type,
              file_size: data.file_size,
              content: data.content,
              created_at: event.occurred_at,
            })
            .onConflict((oc) => oc.column('id').doNothing())
            .execute();
          break;
        }
        case 'context_file.deleted':
          await trx.deleteFrom('context_files').where('id', '=', event.data.file_id).execute();
          break;
        case 'context_url.added':
          await trx
            .insertInto('context_urls')
            .values({
              id: event.data.url_id,
              account_id: event.account_id,
              url: event.data.url,
              title: null,
              content: null,
              content_hash: null,
              etag: null,
              last_modified: null,
              last_scraped_at: null,
              last_attempt_at: null,
              last_error: null,
              created_at: event.occurred_at,
            })
            .onConflict((oc) => oc.column('id').doNothing())
            .execute();
          break;
        case 'context_url.fetched': {
          const { data } = event;
          await trx
            .updateTable('context_urls')
            .set({
              last_scraped_at: event.occurred_at,
              last_attempt_at: event.occurred_at,
              last_error: null,
              ...(!data.unchanged && {
                title: data.title,
                content: data.content,
                content_hash: data.content_hash,
              }),
              etag: data.etag,
              last_modified: data.last_modified,
            })
            .where('id', '=', data.url_id)
            .execute();
          break;
        }
        case 'context_url.fetch_failed':
          await trx
            .updateTable('context_urls')
            .set({ last_attempt_at: event.occurred_at, last_error: event.data.error })
            .where('id', '=', event.data.url_id)
            .execute();
          break;
        case 'context_url.deleted':
          await trx.deleteFrom('context_urls').where('id', '=', event.data.url_id).execute();
          break;
        default: {
          const unhandled: never = event;
          throw new Error(`Unhandled event ${(unhandled as DomainEvent).type}`);
        }
      }
    }
  },
);
