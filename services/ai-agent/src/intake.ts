import { keywordOf, optOutOf } from '@leadline/domain';
import type { DomainEvent, EventOf, EventType } from '@leadline/events';
import {
  advanceCheckpoint,
  freshRecords,
  type Clock,
  type Database,
  type DocumentStore,
  type PersonalDataKeys,
  type PositionedEvent,
} from '@leadline/runtime';
import { sql, type Insertable, type Kysely, type Transaction } from 'kysely';
import { forgetErasedLead, forgetExpiredContent } from './erasure';

/** What the intake takes in; the consumer passes over batches holding none of these. */
export const intakeTypes: ReadonlySet<EventType> = new Set([
  'message.received',
  'sequence.ai_step_requested',
  'lead.erased',
  'account.content_expired',
]);

/** Messages older than this when the agent first sees them (history before it ran) are not answered. */
const MAX_INTAKE_AGE_MS = 24 * 3600_000;

const inboundTurnId = (accountId: string, phone: string) => `inbound:${accountId}:${phone}`;

export interface IntakeDeps {
  db: Kysely<Database>;
  clock: Clock;
  /** Quiet time after the last inbound message before a burst is answered. */
  replyDelayMs: number;
  /** Names an erased lead's phone (`lead.erased` carries the keyed hash, not the number). */
  personalDataKeys: Pick<PersonalDataKeys, 'subjectOf'>;
  /** Where the documents' bytes are, destroyed with an erased lead's documents. */
  documents: DocumentStore;
}

type PendingMessageRow = Insertable<Database['ai_pending_messages']>;
type PendingTurnRow = Insertable<Database['ai_pending_turns']>;

/**
 * The inbound messages of a run of consecutive records, queued in one statement: each message, and a
 * pending turn per conversation due `replyDelayMs` after the latest message of its burst. A later
 * message pushes the answer back and names the turn's cause; an earlier redelivery does not move it.
 */
function createInboundQueue(trx: Transaction<Database>, deps: IntakeDeps, partition: number) {
  const messages = new Map<string, PendingMessageRow>();
  const turns = new Map<string, PendingTurnRow & { due_at: Date }>();
  return {
    add({ event, offset }: PositionedEvent & { event: EventOf<'message.received'> }) {
      const { data } = event;
      const turnId = inboundTurnId(event.account_id, data.phone);
      if (!messages.has(data.message_id))
        messages.set(data.message_id, {
          message_id: data.message_id,
          turn_id: turnId,
          account_id: event.account_id,
          phone: data.phone,
          body: data.body,
          media: JSON.stringify(data.media),
          received_at: event.occurred_at,
          log_partition: partition,
          log_next_offset: BigInt(offset) + 1n,
        });
      const due = new Date(new Date(event.occurred_at).getTime() + deps.replyDelayMs);
      const earlier = turns.get(turnId);
      // As the statement's upsert does with a row already queued: the latest due, the latest cause.
      turns.set(turnId, {
        ...(earlier ?? {
          id: turnId,
          kind: 'inbound',
          account_id: event.account_id,
          partner_id: event.partner_id,
          phone: data.phone,
          lease_until: null,
          first_failure_at: null,
          step: null,
        }),
        due_at: earlier && earlier.due_at > due ? earlier.due_at : due,
        causation_id: event.id,
        correlation_id: event.correlation_id,
      });
    },
    async flush() {
      if (turns.size === 0) return;
      await trx
        .with('queued', (db) =>
          db
            .insertInto('ai_pending_messages')
            .values([...messages.values()])
            .onConflict((oc) => oc.doNothing())
            .returning('message_id'),
        )
        .insertInto('ai_pending_turns')
        .values([...turns.values()])
        .onConflict((oc) =>
          oc.column('id').doUpdateSet({
            due_at: sql`greatest(ai_pending_turns.due_at, excluded.due_at)`,
            causation_id: sql`excluded.causation_id`,
            correlation_id: sql`excluded.correlation_id`,
          }),
        )
        .execute();
      messages.clear();
      turns.clear();
    },
  };
}

/**
 * Queues what the log brings: `message.received` into a pending turn per conversation (consecutive
 * ones together, see `createInboundQueue`), and `sequence.ai_step_requested` into a pending step;
 * `lead.erased` takes the lead's out. In log order, and in the same transaction as the consumer's
 * checkpoint, so nothing is queued twice or lost.
 */
async function intake(
  trx: Transaction<Database>,
  deps: IntakeDeps,
  inbound: ReturnType<typeof createInboundQueue>,
  record: PositionedEvent & { event: DomainEvent },
) {
  const { event } = record;
  if (event.type === 'message.received') {
    // Keywords and revocations in words are the messaging decider's (it confirms an opt-out once).
    if (keywordOf(event.data.body) || optOutOf(event.data.body)) return;
    if (deps.clock.now().getTime() - new Date(event.occurred_at).getTime() > MAX_INTAKE_AGE_MS) return;
    inbound.add({ ...record, event });
    return;
  }
  // Anything else comes after the messages before it.
  await inbound.flush();
  if (event.type === 'lead.erased') {
    // In log order with the intake: what the lead sent before its erasure is forgotten, a message from
    // the same number after it (a new lead) is queued as any other.
    await forgetErasedLead(trx, deps, event);
  } else if (event.type === 'account.content_expired') {
    await forgetExpiredContent(trx, deps, event);
  } else if (event.type === 'sequence.ai_step_requested') {
    const { data } = event;
    await trx
      .insertInto('ai_pending_turns')
      .values({
        id: `step:${data.enrollment_id}:${data.step_order}`,
        kind: 'step',
        account_id: event.account_id,
        partner_id: event.partner_id,
        phone: data.phone,
        due_at: event.occurred_at,
        lease_until: null,
        first_failure_at: null,
        step: JSON.stringify(data),
        causation_id: event.id,
        correlation_id: event.correlation_id,
      })
      .onConflict((oc) => oc.doNothing())
      .execute();
  }
}

/** One partition's batch, queued with its checkpoint in one transaction. */
export async function intakeBatch(
  deps: IntakeDeps,
  topic: string,
  partition: number,
  records: PositionedEvent[],
): Promise<void> {
  const last = records.at(-1);
  if (!last) return;
  const { db, clock } = deps;
  await db.transaction().execute(async (trx) => {
    const fresh = await freshRecords(trx, 'ai_agent_checkpoints', topic, partition, records, clock.now());
    const inbound = createInboundQueue(trx, deps, partition);
    for (const record of fresh)
      if (record.event) await intake(trx, deps, inbound, { ...record, event: record.event });
    await inbound.flush();
    await advanceCheckpoint(trx, 'ai_agent_checkpoints', topic, partition, last.offset, clock.now());
  });
}
