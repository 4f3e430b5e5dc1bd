import { ai, type DomainEvent } from '@leadline/events';
import { defineProjection } from '../projection';

/** The AI's handled turns (so none is handled twice), the conversation summary and prompt settings. */
export const aiProjection = defineProjection(
  'ai',
  ['ai.turn_completed', 'ai.prompt_updated'],
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
            await trx
              .updateTable('conversations')
              .set({ summary: data.summary })
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
        default: {
          const unhandled: never = event;
          throw new Error(`Unhandled event ${(unhandled as DomainEvent).type}`);
        }
      }
    }
  },
);
