import { accountStepStates, stepState } from '@leadline/decision-state';
import { decideAiStepOutcome, decideDueStep, evolveStepState, inAppendOrder } from '@leadline/domain';
import type { DomainEvent, EventCodec, NewEvent, TopicNames } from '@leadline/events';
import {
  advanceCheckpoint,
  freshRecords,
  startLogConsumer,
  type Clock,
  type CommandBus,
  type CommandContext,
  type Database,
  type EventToAppend,
  type NewId,
  type PositionedEvent,
} from '@leadline/runtime';
import type { Kafka } from 'kafkajs';
import type { Kysely } from 'kysely';
import { claimDueSteps, expireLeases, releaseLeases, type DueStep } from './claims';

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

const SERVICE = 'sequencer';
const CHECKPOINTS = 'sequencer_checkpoints';
/**
 * What one append of decided steps may hold, well under what one command may append
 * (`APPEND_MAX_BYTES`): steps are decided until their events pass this, so a claim of 1,000 short
 * steps is one append, and the longest messages and AI instructions go fewer to an append (the rest
 * in the next command on the account).
 */
const APPEND_BUDGET_BYTES = 4 * 1024 * 1024;
/** An event's envelope (ids, actor, times, headers) beside its data, rounded up. */
const ENVELOPE_BYTES = 500;

const contextOf = (partnerId: string, correlationId: string, causationId: string | null): CommandContext => ({
  partnerId,
  actor: { kind: 'system', service: SERVICE },
  correlationId,
  causationId,
});

/**
 * The only code that decides when a sequence step is due. Due times live in the enrollments read model
 * (`next_step_at`, from the log); the sequencer claims due steps with a lease, then decides them per
 * account through the decide-and-append path (the account's lock, caught-up read models), appending
 * what it did: the step's message (through the send decider, as a manual message would go), a skip,
 * a deferral to the sending window, or the AI agent's request. A claim that is stale by then (the
 * step was already done by another sequencer, or before a crash) decides nothing, which is what makes
 * each step go out exactly once.
 *
 * It also follows the log for the AI agent's answers (`message.outbound_requested` carrying an AI
 * step, or `sequence.ai_step_failed`) and moves those enrollments on.
 */
export async function startSequencer(deps: SequencerDeps): Promise<RunningSequencer> {
  const { kafka, db, codec, topics, commands, clock, newId, hourSeconds } = deps;
  const concurrency = deps.concurrency ?? 8;
  const batchSize = deps.batchSize ?? 1000;
  const leaseMs = deps.leaseMs ?? 30_000;
  const onError = deps.onError ?? ((error) => console.error('sequencer:', error));

  /**
   * One account's claimed steps: one lock, one high-watermark check, one append of every step's events
   * (in order), without waiting for the projector afterwards (the next decision on the account waits
   * for it before reading). Each step is still decided on its own rules (opt-out, the window and the
   * state's rules, the enrollment still active, the lead still there, the state's daily cap), counting
   * the steps decided before it in the same command. Returns the steps to release (held to a later
   * time) and the ones left for the next command (past the append's size budget). A step done keeps its
   * lease until it runs out (the read models may not show it done yet, and the lease keeps it from being
   * claimed again meanwhile); a step that did nothing (a stale claim, a lead gone) is looked at again
   * only after its lease.
   */
  async function decideAccountSteps(
    steps: readonly DueStep[],
  ): Promise<{ release: DueStep[]; undecided: DueStep[] }> {
    const first = steps[0]!;
    const { result } = await commands.execute({
      stream: { topic: 'account', accountId: first.account_id },
      context: contextOf(first.partner_id, first.enrollment_id, null),
      lockKeys: [`account:${first.account_id}`],
      consistency: 'partition',
      // The next decision about this account waits for the log to be projected anyway.
      readYourWrites: false,
      async decide(trx) {
        const events: EventToAppend[] = [];
        const deferred: DueStep[] = [];
        let undecided: DueStep[] = [];
        let bytes = 0;
        const now = clock.now();
        const states = await accountStepStates(
          trx,
          first.account_id,
          steps.map((step) => step.enrollment_id),
          now,
        );
        // The read models do not see this command's own events: a step decided after another of its
        // number (a lead in two sequences) reads the state as the projector will leave it.
        const enrollmentsOf = Map.groupBy(states.keys(), (id) => states.get(id)!.enrollment!.phone);
        for (const [index, step] of steps.entries()) {
          if (bytes > APPEND_BUDGET_BYTES) {
            // The rest go in the next command on the account, once this one's events are projected.
            undecided = steps.slice(index);
            break;
          }
          const state = states.get(step.enrollment_id);
          const decided = state
            ? decideDueStep(state, step.step_order, { now, hourSeconds, messageId: newId() })
            : [];
          for (const id of state && decided.length > 0 ? enrollmentsOf.get(state.enrollment!.phone)! : []) {
            const evolved = decided.reduce(
              (next, event) => evolveStepState(next, event, now),
              states.get(id)!,
            );
            states.set(id, evolved);
          }
          const held = (event: NewEvent) =>
            (event.type === 'sequence.step_held' || event.type === 'sequence.step_held_for_consent') &&
            event.data.step_order === step.step_order;
          if (decided.some(held)) deferred.push(step);
          // One append for many enrollments: each step's events stay traced to their own enrollment.
          events.push(
            ...decided.map((event) => ({ ...event, correlationId: step.enrollment_id, causationId: null })),
          );
          for (const event of decided)
            bytes += ENVELOPE_BYTES + Buffer.byteLength(JSON.stringify(event.data));
        }
        return { events: inAppendOrder(events), result: { release: deferred, undecided } };
      },
    });
    return result;
  }

  /** Decides all of one account's claimed steps: one command, more only past the size budget. */
  async function decideAccount(steps: readonly DueStep[]) {
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

  /** Accounts appended to in the running tick, with a partner to stamp a no-op command with. */
  const touched = new Map<string, string>();

  /**
   * Accounts this process is deciding: a claim skips them (their steps wait for the decision under
   * way, whose events the next decision must see), and takes other accounts' steps meanwhile, so the
   * log and the projector stay busy with many accounts instead of queueing behind one.
   */
  const busy = new Set<string>();

  /**
   * Claims and decides due steps until none is left: up to `concurrency` accounts at once, each with up
   * to `batchSize` of its due steps decided in one command. When an account is done, a claim takes the
   * next accounts (or more of the same account's steps).
   */
  async function tickOnce(): Promise<number> {
    await expireLeases(db, clock.now()).catch(onError);
    let total = 0;
    const inFlight = new Set<Promise<void>>();
    for (;;) {
      const free = concurrency - inFlight.size;
      const claimed =
        free > 0
          ? await claimDueSteps(db, clock.now(), leaseMs, batchSize, {
              accounts: free,
              skipAccounts: [...busy],
            }).catch((error: unknown) => {
              // Claiming failed (the database is unavailable, or lost a race): the next tick tries again.
              onError(error);
              return [] as DueStep[];
            })
          : [];
      total += claimed.length;
      for (const [accountId, steps] of Map.groupBy(claimed, (step) => step.account_id)) {
        busy.add(accountId);
        touched.set(accountId, steps[0]!.partner_id);
        const deciding: Promise<void> = decideAccount(steps)
          .catch((error: unknown) => {
            // Nothing more was appended (the log or the read models were unavailable): the leases run
            // out and the steps are claimed again.
            onError(error);
          })
          .finally(() => {
            busy.delete(accountId);
            inFlight.delete(deciding);
          });
        inFlight.add(deciding);
      }
      if (claimed.length === 0 || inFlight.size >= concurrency) {
        // Nothing more to claim now (or no room): wait for an account to be done, then claim again.
        if (inFlight.size === 0) break;
        await Promise.race(inFlight);
      }
    }
    // Appends do not wait for the projector (the next decision does); the tick as a whole does, so
    // what it did is readable when it returns. An empty command waits for its account's partition.
    const accounts = [...touched];
    touched.clear();
    await Promise.all(
      accounts.map(([accountId, partnerId]) => projected(accountId, partnerId).catch(onError)),
    );
    return total;
  }

  let running: Promise<number> | undefined;
  let again = false;
  /** One loop at a time; a tick during a run makes it go round once more. */
  function tick(): Promise<number> {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      let total = 0;
      do {
        again = false;
        total += await tickOnce();
      } while (again);
      return total;
    })().finally(() => (running = undefined));
    return running;
  }

  /** The AI agent's answers, in log order; each is decided under the account's lock. */
  async function aiOutcomes(events: readonly DomainEvent[]) {
    // A fixed step's message is appended with its `sequence.step_sent`: that step is done already.
    const done = new Set(
      events.flatMap((event) => (event.type === 'sequence.step_sent' ? [event.data.message_id] : [])),
    );
    for (const event of events) {
      let ref: { enrollment_id: string; step_order: number } | undefined;
      let outcome: Parameters<typeof decideAiStepOutcome>[2] | undefined;
      // The sequencer writes fixed steps only; an AI step's message comes from another writer.
      const ownMessage = event.actor.kind === 'system' && event.actor.service === SERVICE;
      if (
        event.type === 'message.outbound_requested' &&
        event.data.sequence_step &&
        !ownMessage &&
        !done.has(event.data.message_id)
      ) {
        ref = event.data.sequence_step;
        outcome = { kind: 'sent', message_id: event.data.message_id };
      } else if (event.type === 'sequence.ai_step_failed') {
        ref = event.data;
        outcome = { kind: 'failed' };
      }
      if (!ref || !outcome || event.account_id === null) continue;
      const { enrollment_id, step_order } = ref;
      const decided = outcome;
      await commands.execute({
        stream: { topic: 'account', accountId: event.account_id },
        context: contextOf(event.partner_id, event.correlation_id, event.id),
        lockKeys: [`account:${event.account_id}`],
        consistency: 'partition',
        async decide(trx) {
          const state = await stepState(trx, enrollment_id, clock.now());
          const events = state
            ? decideAiStepOutcome(state, step_order, decided, { now: clock.now(), hourSeconds })
            : [];
          return { events, result: undefined };
        },
      });
    }
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
    if (moved.size === 0 && events.some((event) => !movers.has(event.type))) void tick().catch(onError);
    if (moved.size > 0) {
      void (async () => {
        for (const [accountId, partnerId] of moved) await projected(accountId, partnerId);
        await tick();
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
    await aiOutcomes(events);
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

  const poll = setInterval(() => void tick().catch(onError), deps.pollIntervalMs ?? 500);

  return {
    tick,
    async stop() {
      clearInterval(poll);
      await consumer.stop();
      await running?.catch(() => undefined);
    },
  };
}
