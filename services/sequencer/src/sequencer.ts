import { accountStepStates } from '@leadline/decision-state';
import { createWorker, reportFailure, type LogServiceDeps, type NewId } from '@leadline/runtime';
import { contextOf } from './ai-outcomes';
import { expireLeases, releaseLeases, type DueStep } from './claims';
import { dueStepsQueue, dueStepsRetry, type AccountSteps } from './due-steps';
import { followTheLog } from './follow-log';
import { decideStepBatch, type StepBatch } from './step-batch';

export interface SequencerDeps extends LogServiceDeps {
  newId: NewId;
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
  const onError = deps.onError ?? reportFailure('sequencer');

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
        const states = await accountStepStates(trx, deps.personalDataKeys, first.account_id, ids, now);
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

  const consumer = await followTheLog(
    {
      kafka,
      db,
      codec,
      topics,
      groupId: deps.groupId,
      commands,
      personalDataKeys: deps.personalDataKeys,
      clock,
      hourSeconds,
      onError,
    },
    { projected, stepsMayBeDue: () => worker.wake() },
  );

  worker.start();

  return {
    tick,
    async stop() {
      await consumer.stop();
      await worker.stop();
    },
  };
}
