import type { DomainEvent, EventCodec, TopicNames } from '@leadline/events';
import {
  advanceCheckpoint,
  freshRecords,
  startLogConsumer,
  type Clock,
  type CommandBus,
  type Database,
  type PersonalDataKeys,
  type PositionedEvent,
  type RunningConsumer,
} from '@leadline/runtime';
import type { Kafka } from 'kafkajs';
import type { Kysely } from 'kysely';
import { decideAiOutcomes } from './ai-outcomes';

const CHECKPOINTS = 'sequencer_checkpoints';

export interface FollowDeps {
  kafka: Kafka;
  db: Kysely<Database>;
  codec: EventCodec;
  topics: TopicNames;
  groupId: string;
  commands: CommandBus;
  personalDataKeys: Pick<PersonalDataKeys, 'subjectOf'>;
  clock: Clock;
  hourSeconds: number;
  onError: (error: unknown) => void;
}

/**
 * The sequencer's reading of the log: the AI agent's answers to AI steps, decided in log order (see
 * `decideAiOutcomes`), and the events after which steps may be due at once, so the worker looks as soon
 * as the projector shows them rather than at the next poll.
 */
export async function followTheLog(
  deps: FollowDeps,
  hooks: {
    /** Waits until an account's partition is projected up to what is on the log now. */
    projected: (accountId: string, partnerId: string) => Promise<void>;
    stepsMayBeDue: () => void;
  },
): Promise<RunningConsumer> {
  const { db, commands, clock, hourSeconds, onError } = deps;
  /**
   * Events after which steps may be due at once: new enrollments, a reactivated account or sequence,
   * consent granted or no longer required (steps held for it are overdue).
   */
  const movers = new Set([
    'sequence.enrolled',
    'sequence.leads_enrolled',
    'account.reactivated',
    'sequence.updated',
    'lead.consent_granted',
    'account.updated',
  ]);
  const watched = new Set([
    'message.outbound_requested',
    'sequence.ai_step_failed',
    'sequence.step_sent',
    ...movers,
  ]);
  /** Steps may be due now: tick as soon as the projector shows them, rather than at the next poll. */
  function stepsMayBeDue(events: readonly DomainEvent[]) {
    const { projected } = hooks;
    const moved = new Map(
      events.flatMap((event) =>
        movers.has(event.type) && event.account_id ? [[event.account_id, event.partner_id] as const] : [],
      ),
    );
    // An AI step answered may leave the next step due at once; its decision waited for the projector.
    if (moved.size === 0 && events.some((event) => !movers.has(event.type))) hooks.stepsMayBeDue();
    if (moved.size > 0) {
      void (async () => {
        for (const [accountId, partnerId] of moved) await projected(accountId, partnerId);
        hooks.stepsMayBeDue();
      })().catch(onError);
    }
  }

  /**
   * One partition's batch, in log order. The checkpoint moves once the AI agent's answers in it are
   * decided, in a transaction of its own: the decisions are appended to Kafka through the command bus
   * and cannot share it. A crash in between hands the batch over again, which is safe: each answer's
   * command waits until its partition is projected (the first decision included) and
   * `decideAiStepOutcome` decides only for an enrollment still waiting on the AI at that step, so an
   * answer decided once decides nothing the second time.
   */
  async function handleBatch(topic: string, partition: number, records: PositionedEvent[]) {
    const last = records.at(-1);
    if (!last) return;
    // Parks what cannot be read and holds back its account's later records; the checkpoint's lock ends
    // with this transaction (two instances during a rebalance decide nothing twice, as above).
    const fresh = await db
      .transaction()
      .execute((trx) => freshRecords(trx, CHECKPOINTS, topic, partition, records, clock.now()));
    const events = fresh.flatMap(({ event }) => (event && watched.has(event.type) ? [event] : []));
    await decideAiOutcomes({ commands, personalDataKeys: deps.personalDataKeys, clock, hourSeconds }, events);
    await db
      .transaction()
      .execute((trx) => advanceCheckpoint(trx, CHECKPOINTS, topic, partition, last.offset, clock.now()));
    stepsMayBeDue(events);
  }

  return startLogConsumer({
    kafka: deps.kafka,
    db,
    codec: deps.codec,
    groupId: deps.groupId,
    topics: [deps.topics.account],
    checkpoints: CHECKPOINTS,
    handleBatch,
    // Only what it acts on is decoded (the header names the type): a record of another type is not its
    // to read, nor to park.
    decodes: (type) => type !== undefined && watched.has(type),
    actsOn: (event) => watched.has(event.type),
    // It reads ids, steps and accounts off what it follows, never a phone or a body: nothing to decrypt.
    opens: () => false,
    // Kafka kept this consumer's position before Postgres did: an upgrade continues from there.
    startAtGroupOffsets: true,
    onCrash: (error) => onError(error),
  });
}
