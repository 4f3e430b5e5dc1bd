import { leadName } from '@leadline/events';
import { notFound, type CommandBus, type Database, type NewId } from '@leadline/runtime';
import type { Clock } from '@leadline/runtime';
import type { Kysely } from 'kysely';
import { decideReceiveMessage, type ReceiveMessage } from '../conversations/decide';
import { conversationState } from '../conversations/queries';
import { decideSequenceReplies } from '../sequences/decide';
import { activeEnrollments } from '../sequences/queries';

export interface InboundDeps {
  db: Kysely<Database>;
  commands: CommandBus;
  clock: Clock;
  newId: NewId;
}

/**
 * Decides an inbound SMS inline, through the decide-and-append path on the account's stream: the
 * same lock as every other writer of the account, so lead creation from an unknown sender shares the
 * import dedupe, an opt-out is seen by the next send, and a redelivered MessageSid is found in the
 * caught-up read model and stored once. Returns false when it was a redelivery.
 */
export async function receiveInboundSms(
  deps: InboundDeps,
  input: Omit<ReceiveMessage, 'type' | 'message_id'>,
): Promise<boolean> {
  const { db, commands, clock, newId } = deps;
  const owner = await db
    .selectFrom('accounts')
    .select(['id', 'partner_id'])
    .where('phone_number', '=', input.to)
    // A released number belongs to no account here, even while the old account still shows it.
    .where('phone_number_released_at', 'is', null)
    .executeTakeFirst();
  if (!owner) throw notFound('phone_number');
  const { result } = await commands.execute({
    stream: { topic: 'account', accountId: owner.id },
    context: {
      partnerId: owner.partner_id,
      actor: { kind: 'system', service: 'twilio-inbound' },
      correlationId: input.provider_message_id,
    },
    lockKeys: [`account:${owner.id}`],
    consistency: 'partition',
    async decide(trx) {
      const seen = await trx
        .selectFrom('messages')
        .select('id')
        .where('provider_message_id', '=', input.provider_message_id)
        .executeTakeFirst();
      if (seen) return { events: [], result: false };
      const account = await trx
        .selectFrom('accounts')
        .select(['id', 'status', 'company_name', 'ai_pause_minutes'])
        .where('id', '=', owner.id)
        .executeTakeFirstOrThrow();
      const state = await conversationState(trx, account, input.phone);
      const command: ReceiveMessage = { type: 'ReceiveMessage', message_id: newId(), ...input };
      const events = decideReceiveMessage(command, state, { newId, now: clock.now() });
      const replies = decideSequenceReplies(await activeEnrollments(trx, account.id, input.phone), {
        message_id: command.message_id,
        body: input.body,
        lead_name: leadName(state.lead),
      });
      return { events: [...events, ...replies], result: true };
    },
  });
  return result;
}
