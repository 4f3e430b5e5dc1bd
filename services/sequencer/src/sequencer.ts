import { accountStepStates } from '@leadline/decision-state';
import type { DomainEvent, EventCodec, TopicNames } from '@leadline/events';
import {
  advanceCheckpoint,
  createWorker,
  freshRecords,
  startLogConsumer,
  type Clock,
  type CommandBus,
  type Database,
  type NewId,
  type PositionedEvent,
} from '@leadline/runtime';
import type { Kafka } from 'kafkajs';
import type { Kysely } from 'kysely';
import { contextOf, decideAiOutcomes } from './ai-outcomes';
import { expireLeases, releaseLeases, type DueStep } from './claims';
import { dueStepsQueue, dueStepsRetry, type AccountSteps } from './due-steps';
import { decideStepBatch, type StepBatch } from './step-batch';

export interface SequencerDeps {
  kafka: Kafka;
  /** The sequencer's own connections, for claims (outside the commands' transactions). */
  db: Kysely<Database>;
  codec: EventCodec;
  topics: TopicNames;
  commands: CommandBus;
  clock: Clock;
  newId: NewId;
  groupId: string;
  /** How many seconds one `delay_hours` unit lasts. */
  hourSeconds: number;
  /**
   * Accounts decided at once; one account's claimed steps are decided together, in one command
   * (one lock, one wait for the read models, one append).
   */
  concurrency?: number;
  /** The most due steps of one account claimed at once. */
  batchSize?: number;
  leaseMs?: number;
  pollIntervalMs?: number;
  onError?: (error: unknown) => void;
}

export interface RunningSequencer {
  /** Decides every step due now (tests and the bench call it instead of waiting for the poll). */
  tick(): Promise<number>;
  stop(): Promise<void>;
}

const CHECKPOINTS = 'sequencer_checkpoints';

/**
 * The only code that decides when a sequence step is due. Due times live in the enrollments read model
 * (`next_step_at`, from the log); the sequencer claims due steps with a lease, then decides them per
 * account through the decide-and-append path (the account's lock, caught-up read models), appending
 * what it did: the step's message (through the send decider, as a manual message would go), a skip,
 * a deferral to the sending window, or the AI agent's request. A claim that is stale by then (the
 * step was already done by another sequencer, or before a crash) decides nothing, which is what makes
 * each step go out exactly once. The claims run on the shared worker runtime (due-steps.ts): up to
 * `concurrency` accounts at once, one item per account at a time.
 *
 * It also follows the log for the AI agent's answers (`message.outbound_requested` carrying an AI
 * step, or `sequence.ai_step_failed`) and moves those enrollments on (ai-outcomes.ts).
 */
export async function startSequencer(deps: SequencerDeps): Promise<RunningSequencer> {
  const { kafka, db, codec, topics, commands, clock, newId, hourSeconds } = deps;
  const leaseMs = deps.leaseMs ?? 30_000;
  const onError = deps.onError ?? ((error) => console.error('sequencer:', error));

  /**
   * One account's claimed steps: one lock, one high-watermark check, one append of every step's events
   * (see `decideStepBatch`), without waiting for the projector afterwards (the next decision on the
   * account waits for it before reading).
   */
  async function decideAccountSteps(steps: readonly DueStep[]): Promise<StepBatch> {
    const first = steps[0]!;
    const { result } = await commands.execute({
      stream: { topic: 'account', accountId: first.account_id },
      context: contextOf(first.partner_id, first.enrollment_id, null),
      lockKeys: [`account:${first.account_id}`],
      consistency: 'partition',
      // The next decision about this account waits for the log to be projected anyway.
      readYourWrites: false,
      async decide(trx) {
        const now = clock.now();
        const ids = steps.map((step) => step.enrollment_id);
        const states = await accountStepStates(trx, first.account_id, ids, now);
        const batch = decideStepBatch(steps, states, { now, hourSeconds, newId });
        return { events: batch.events, result: batch };
      },
    });
    return result;
  }

  /** Accounts appended to since the last tick returned, with a partner to stamp a no-op command with. */
  const touched = new Map<string, string>();

  /** Decides all of one account's claimed steps: one command, more only past the size budget. */
  async function decideAccount({ accountId, partnerId, steps }: AccountSteps) {
    touched.set(accountId, partnerId);
    let left: readonly DueStep[] = steps;
    while (left.length > 0) {
      const decided = await decideAccountSteps(left);
      await releaseLeases(db, decided.release);
      left = decided.undecided;
    }
  }

  /** Waits until the account's partition is projected up to what is on the log now (an empty command). */
  async function projected(accountId: string, partnerId: string) {
    await commands.execute({
      stream: { topic: 'account', accountId },
      context: contextOf(partnerId, accountId, null),
      lockKeys: [],
      consistency: 'partition',
      decide: async () => ({ events: [], result: undefined }),
    });
  }

  const worker = createWorker({
    queue: dueStepsQueue({
      db,
      clock,
      leaseMs,
      batchSize: deps.batchSize ?? 1000,
      run: decideAccount,
      onError,
    }),
    clock,
    concurrency: deps.concurrency ?? 8,
    fairness: { keyOf: (item) => item.accountId, perKey: 1 },
    retry: dueStepsRetry,
    // Half the lease: a claim that cannot be decided in that time (a stuck database, a silent broker)
    // is handed back before its lease could run out under it.
    budgetMs: leaseMs / 2,
    pollMs: deps.pollIntervalMs ?? 500,
    // Leases of steps long done go now and then (the poll), not on every wake.
    beforePass: async (reason) => {
      if (reason === 'poll') await expireLeases(db, clock.now()).catch(onError);
    },
    onError,
  });

  /**
   * Decides every step due now and waits until the read models show what it did (tests and the bench
   * call it instead of waiting for the poll): appends do not wait for the projector, the tick as a whole
   * does, with an empty command per account it touched.
   */
  async function tick(): Promise<number> {
    await expireLeases(db, clock.now()).catch(onError);
    const settled = await worker.drain();
    const accounts = [...touched];
    touched.clear();
    await Promise.all(
      accounts.map(([accountId, partnerId]) => projected(accountId, partnerId).catch(onError)),
    );
    return settled;
  }

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
    const moved = new Map(
      events.flatMap((event) =>
        movers.has(event.type) && event.account_id ? [[event.account_id, event.partner_id] as const] : [],
      ),
    );
    // An AI step answered may leave the next step due at once; its decision waited for the projector.
    if (moved.size === 0 && events.some((event) => !movers.has(event.type))) worker.wake();
    if (moved.size > 0) {
      void (async () => {
        for (const [accountId, partnerId] of moved) await projected(accountId, partnerId);
        worker.wake();
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
    await decideAiOutcomes({ commands, clock, hourSeconds }, events);
    await db
      .transaction()
      .execute((trx) => advanceCheckpoint(trx, CHECKPOINTS, topic, partition, last.offset, clock.now()));
    stepsMayBeDue(events);
  }

  const consumer = await startLogConsumer({
    kafka,
    db,
    codec,
    groupId: deps.groupId,
    topics: [topics.account],
    checkpoints: CHECKPOINTS,
    handleBatch,
    // Only what it acts on is decoded (the header names the type): a record of another type is not its
    // to read, nor to park.
    decodes: (type) => type !== undefined && watched.has(type),
    actsOn: (event) => watched.has(event.type),
    // Kafka kept this consumer's position before Postgres did: an upgrade continues from there.
    startAtGroupOffsets: true,
    onCrash: (error) => onError(error),
  });

  worker.start();

  return {
    tick,
    async stop() {
      await consumer.stop();
      await worker.stop();
    },
  };
}
