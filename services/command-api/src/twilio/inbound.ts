import { optOutOf } from '@leadline/domain';
import type { EventData } from '@leadline/events';
import {
  notFound,
  recordReceipts,
  type Clock,
  type CommandBus,
  type Database,
  type NewId,
} from '@leadline/runtime';
import type { Kysely } from 'kysely';

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
 * An opt-out (a keyword, or a request in words: `optOutOf`, the rule the decider applies) takes effect
 * now: a guard row (account, phone) is written before Twilio is answered, and every send path refuses
 * the number while it exists; the decider removes it once the opt-out's decision is in the read
 * models. Returns false for a redelivery.
 */
export async function acceptInboundSms(deps: InboundDeps, input: InboundSms): Promise<boolean> {
  const { db, commands, clock } = deps;
  // The number's account, and whether the SID has a receipt already, in one round trip.
  const owner = await db
    .selectFrom('accounts')
    .select((eb) => [
      'id',
      'partner_id',
      eb
        .exists(
          eb
            .selectFrom('inbound_receipts')
            .select('account_id')
            .where('message_sid', '=', input.provider_message_id),
        )
        .as('received'),
    ])
    .where('phone_number', '=', input.to)
    // A released number belongs to no account here, even while the old account still shows it; nor
    // does an erased account's: it keeps nothing a person sends it.
    .where('phone_number_released_at', 'is', null)
    .where('erased_at', 'is', null)
    .executeTakeFirst();
  if (!owner) throw notFound('phone_number');
  if (owner.received) return false;
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
  if (optOutOf(input.body)) {
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
  await recordReceipts(db, [{ sid: input.provider_message_id, accountId: owner.id, at: clock.now() }]);
  return true;
}
