import {
  decideReceiveMessage,
  decideSequenceReplies,
  evolveConversationState,
  evolveEnrollment,
  type ConversationState,
  type Enrollment,
  type ReceiveMessage,
} from '@leadline/domain';
import { activeEnrollments, conversationStates } from '@leadline/decision-state';
import { leadName, type EventOf, type NewEvent } from '@leadline/events';
import {
  claimReceipts,
  type Database,
  type EventToAppend,
  type LogServiceDeps,
  type NewId,
} from '@leadline/runtime';
import type { Transaction } from 'kysely';

/** What deciding a batch of inbound SMS needs of the decider's own deps. */
export type InboundDeps = Pick<LogServiceDeps, 'db' | 'commands' | 'clock' | 'personalDataKeys'> & {
  newId: NewId;
};

export type InboundOutcome = 'decided' | 'redelivered' | 'other_account';

/**
 * The most inbound SMS of one account decided in one command: bounds how long a burst holds the
 * account's lock (and the size of one append) while every message still shares the command's costs.
 */
export const INBOUND_BATCH_MAX = 200;

/** Decides one kept inbound SMS (see `decideInboundBatch`). */
export async function decideInboundSms(
  deps: InboundDeps,
  fact: EventOf<'message.inbound_received'>,
): Promise<InboundOutcome> {
  const [outcome] = await decideInboundBatch(deps, [fact]);
  return outcome!;
}

/**
 * Decides kept inbound SMS of ONE account, in log order, through the decide-and-append path on the
 * account's stream: one command (one lock, one wait for the read models, one append of every
 * resulting event in the messages' order) for up to `INBOUND_BATCH_MAX` of them. The same lock as every
 * other writer of the account, so lead creation from an unknown sender shares the import dedupe; a
 * MessageSid already stored (a raw fact appended twice, a redelivered record) is found in the caught-up
 * read model, or earlier in the same batch, and stored once. A SID some other account claimed first
 * (the same SID posted to two accounts) is not decided here at all.
 *
 * Message k of a batch is decided against the read models as they will be once messages 1..k-1 are
 * projected: their events evolve the state the decision reads (`evolveSender`, by the domain's
 * evolve functions, whose changes the projector writes too), so a STOP then a text, a START after a
 * STOP, or three texts from one new sender decide as they would one by one.
 *
 * The decider is a background service: it does not wait for its own writes to be projected (nothing
 * reads them through it), and its next decision for the account waits for the read models to reach
 * the partition's end anyway (`consistency: 'partition'`).
 */
export async function decideInboundBatch(
  deps: InboundDeps,
  facts: readonly EventOf<'message.inbound_received'>[],
): Promise<InboundOutcome[]> {
  const { db } = deps;
  const accountId = facts[0]?.account_id;
  if (accountId === undefined) return [];
  if (facts.some((fact) => fact.account_id !== accountId))
    throw new Error('decideInboundBatch: the facts of one account only');
  const owners = await claimReceipts(
    db,
    facts.map((fact) => ({
      sid: fact.data.provider_message_id,
      accountId,
      at: new Date(fact.occurred_at),
    })),
  );
  const outcomes = new Map<EventOf<'message.inbound_received'>, InboundOutcome>();
  const mine = facts.filter((fact) => {
    if (owners.get(fact.data.provider_message_id) === accountId) return true;
    outcomes.set(fact, 'other_account');
    return false;
  });
  for (let start = 0; start < mine.length; start += INBOUND_BATCH_MAX) {
    const chunk = mine.slice(start, start + INBOUND_BATCH_MAX);
    const decided = await decideChunk(deps, accountId, chunk);
    chunk.forEach((fact, i) => outcomes.set(fact, decided[i]!));
  }
  return facts.map((fact) => outcomes.get(fact)!);
}

/** What deciding about one sender's messages reads, kept up to date with the batch's own decisions. */
interface SenderState {
  conversation: ConversationState;
  enrollments: Enrollment[];
}

async function decideChunk(
  deps: InboundDeps,
  accountId: string,
  facts: readonly EventOf<'message.inbound_received'>[],
): Promise<InboundOutcome[]> {
  const { commands, clock, newId } = deps;
  const first = facts[0]!;
  const { result } = await commands.execute<InboundOutcome[]>({
    stream: { topic: 'account', accountId },
    // Each message's events name their own fact below (correlation and causation), as a single
    // message's did; the context is the first's.
    context: {
      partnerId: first.partner_id,
      actor: { kind: 'system', service: 'twilio-inbound' },
      correlationId: first.correlation_id,
      causationId: first.id,
    },
    lockKeys: [`account:${accountId}`],
    consistency: 'partition',
    readYourWrites: false,
    async decide(trx) {
      const sids = [...new Set(facts.map((fact) => fact.data.provider_message_id))];
      const stored = await trx
        .selectFrom('messages')
        .select('provider_message_id')
        .where('provider_message_id', 'in', sids)
        .execute();
      const seen = new Set(stored.map((row) => row.provider_message_id));
      const account = await trx
        .selectFrom('accounts')
        .select(['id', 'status', 'company_name', 'ai_pause_minutes'])
        .where('id', '=', accountId)
        .executeTakeFirstOrThrow();
      const senders = await senderStates(
        trx,
        deps.personalDataKeys,
        account,
        facts.map((fact) => fact.data.phone),
      );
      const events: EventToAppend[] = [];
      const outcomes: InboundOutcome[] = [];
      const now = clock.now();
      // Messages are listed by time, then id: the batch's events may share a millisecond, so their
      // message ids ascend in log order and a burst still lists in the order it arrived.
      const messageIds = facts.map(() => newId()).sort();
      for (const [k, fact] of facts.entries()) {
        const input = fact.data;
        if (seen.has(input.provider_message_id)) {
          outcomes.push('redelivered');
          continue;
        }
        seen.add(input.provider_message_id);
        const sender = senders.get(input.phone)!;
        const command: ReceiveMessage = { type: 'ReceiveMessage', message_id: messageIds[k]!, ...input };
        const decided = decideReceiveMessage(command, sender.conversation, { newId, now });
        const replies = decideSequenceReplies(sender.enrollments, {
          message_id: command.message_id,
          body: input.body,
          lead_name: leadName(sender.conversation.lead),
        });
        const traced = { correlationId: fact.correlation_id, causationId: fact.id };
        events.push(...[...decided, ...replies].map((event) => ({ ...event, ...traced })));
        senders.set(input.phone, evolveSender(sender, [...decided, ...replies], now));
        outcomes.push('decided');
      }
      return { events, result: outcomes };
    },
  });
  return result;
}

/** Each sender's state before the batch, read for all of them at once (a query per table). */
async function senderStates(
  trx: Transaction<Database>,
  keys: InboundDeps['personalDataKeys'],
  account: Parameters<typeof conversationStates>[2],
  phones: readonly string[],
): Promise<Map<string, SenderState>> {
  const [conversations, enrollments] = await Promise.all([
    conversationStates(trx, keys, account, phones),
    activeEnrollments(trx, account.id, phones),
  ]);
  return new Map(
    [...conversations].map(([phone, conversation]) => [
      phone,
      { conversation, enrollments: enrollments.get(phone)! },
    ]),
  );
}

/** The sender's state after `events`, as the projector will leave it: lead, conversation, enrollments. */
function evolveSender(sender: SenderState, events: readonly NewEvent[], at: Date): SenderState {
  return events.reduce(
    (state, event) => ({
      conversation: evolveConversationState(state.conversation, event, at),
      enrollments: state.enrollments.map((enrollment) => evolveEnrollment(enrollment, event)),
    }),
    sender,
  );
}
