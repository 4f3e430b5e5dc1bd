import { leadName, type EventData, type EventOf } from '@leadline/events';
import { notFound, type CommandBus, type Database, type NewId } from '@leadline/runtime';
import type { Clock } from '@leadline/runtime';
import type { Kysely } from 'kysely';
import { decideReceiveMessage, keywordOf, type ReceiveMessage } from '../conversations/decide';
import { conversationState } from '../conversations/queries';
import { decideSequenceReplies } from '../sequences/decide';
import { activeEnrollments } from '../sequences/queries';

export interface InboundDeps {
  db: Kysely<Database>;
  commands: CommandBus;
  clock: Clock;
  newId: NewId;
}

export type InboundSms = EventData<'message.inbound_received'>;

/**
 * The inbound webhook's whole job: keep what Twilio sent, durably, and answer. No lock and no wait
 * for the projector, so neither a lagging projector nor a send holding the account's lock can turn
 * a message (perhaps a STOP) into a 503 that Twilio never retries. Deciding about it (lead, keywords,
 * replies, AI) is the inbound decider's, in order per account.
 *
 * Deduplicated by MessageSid across every account: a SID with a receipt is answered without another
 * append. The receipt is written only once the append is acknowledged, so a crash in between leaves
 * a retry that appends again, which the decider stores once.
 *
 * An opt-out takes effect now: a guard row (account, phone) is written before Twilio is answered, and
 * every send path refuses the number while it exists; the decider removes it once the STOP's decision is
 * in the read models. Returns false for a redelivery.
 */
export async function acceptInboundSms(deps: InboundDeps, input: InboundSms): Promise<boolean> {
  const { db, commands, clock } = deps;
  const owner = await db
    .selectFrom('accounts')
    .select(['id', 'partner_id'])
    .where('phone_number', '=', input.to)
    // A released number belongs to no account here, even while the old account still shows it.
    .where('phone_number_released_at', 'is', null)
    .executeTakeFirst();
  if (!owner) throw notFound('phone_number');
  const receipt = await db
    .selectFrom('inbound_receipts')
    .select('account_id')
    .where('message_sid', '=', input.provider_message_id)
    .executeTakeFirst();
  if (receipt) return false;
  await commands.append({
    stream: { topic: 'account', accountId: owner.id },
    context: {
      partnerId: owner.partner_id,
      actor: { kind: 'system', service: 'twilio-inbound' },
      correlationId: input.provider_message_id,
    },
    events: [{ type: 'message.inbound_received', data: input }],
    readYourWrites: false,
  });
  // After the append, so a message that was never kept guards nothing; before the receipt and the
  // answer, so a failure here is retried by Twilio and the guard is written then. An opt-in does not
  // lift a guard here: a START racing a STOP of the same phone could land on the log before it, and a
  // send must never reach a number whose STOP was answered. Sending resumes once both are decided.
  if (keywordOf(input.body)?.kind === 'opt_out') {
    await db
      .insertInto('opt_out_guards')
      .values({
        account_id: owner.id,
        phone: input.phone,
        message_sid: input.provider_message_id,
        created_at: clock.now(),
      })
      .onConflict((oc) =>
        oc.columns(['account_id', 'phone']).doUpdateSet({
          message_sid: input.provider_message_id,
          created_at: clock.now(),
        }),
      )
      .execute();
  }
  await claimReceipt(db, input.provider_message_id, owner.id, clock.now());
  return true;
}

/** The first account to claim a MessageSid owns it; returns the owner. */
async function claimReceipt(db: Kysely<Database>, messageSid: string, accountId: string, now: Date) {
  await db
    .insertInto('inbound_receipts')
    .values({ message_sid: messageSid, account_id: accountId, received_at: now, decided_at: null })
    .onConflict((oc) => oc.column('message_sid').doNothing())
    .execute();
  const { account_id } = await db
    .selectFrom('inbound_receipts')
    .select('account_id')
    .where('message_sid', '=', messageSid)
    .executeTakeFirstOrThrow();
  return account_id;
}

export type InboundOutcome = 'decided' | 'redelivered' | 'other_account';

/**
 * Decides a kept inbound SMS, through the decide-and-append path on the account's stream: the same
 * lock as every other writer of the account, so lead creation from an unknown sender shares the
 * import dedupe, and a MessageSid already stored (a raw fact appended twice, a redelivered record)
 * is found in the caught-up read model and stored once. A SID some other account claimed first (the
 * same SID posted to two accounts) is not decided here at all.
 */
export async function decideInboundSms(
  deps: InboundDeps,
  fact: EventOf<'message.inbound_received'>,
): Promise<InboundOutcome> {
  const { db, commands, clock, newId } = deps;
  const input = fact.data;
  const accountId = fact.account_id;
  const owner = await claimReceipt(db, input.provider_message_id, accountId, new Date(fact.occurred_at));
  if (owner !== accountId) return 'other_account';
  const { result } = await commands.execute<InboundOutcome>({
    stream: { topic: 'account', accountId },
    context: {
      partnerId: fact.partner_id,
      actor: { kind: 'system', service: 'twilio-inbound' },
      correlationId: fact.correlation_id,
      causationId: fact.id,
    },
    lockKeys: [`account:${accountId}`],
    consistency: 'partition',
    async decide(trx) {
      const seen = await trx
        .selectFrom('messages')
        .select('id')
        .where('provider_message_id', '=', input.provider_message_id)
        .executeTakeFirst();
      if (seen) return { events: [], result: 'redelivered' };
      const account = await trx
        .selectFrom('accounts')
        .select(['id', 'status', 'company_name', 'ai_pause_minutes'])
        .where('id', '=', accountId)
        .executeTakeFirstOrThrow();
      const state = await conversationState(trx, account, input.phone);
      const command: ReceiveMessage = { type: 'ReceiveMessage', message_id: newId(), ...input };
      const events = decideReceiveMessage(command, state, { newId, now: clock.now() });
      const replies = decideSequenceReplies(await activeEnrollments(trx, account.id, input.phone), {
        message_id: command.message_id,
        body: input.body,
        lead_name: leadName(state.lead),
      });
      return { events: [...events, ...replies], result: 'decided' };
    },
  });
  return result;
}
