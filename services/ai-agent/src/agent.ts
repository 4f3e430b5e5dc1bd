import {
  createWorker,
  reportFailure,
  startLogConsumer,
  type DocumentStore,
  type LogServiceDeps,
  type NewId,
  type ProjectionProgress,
} from '@leadline/runtime';
import type { EventType } from '@leadline/events';
import { refreshContextUrls } from './context-refresh';
import { intakeBatch, intakeTypes } from './intake';
import type { TurnDeps } from './process-turn';
import { createRecorder } from './record';
import type { Responder } from './turn';
import { turnFairness, turnRetry, turnsQueue } from './turns-queue';

export interface AgentDeps extends LogServiceDeps {
  /** The projector's progress, to wait for a burst to be in the read models before the pre-check. */
  progress: ProjectionProgress;
  newId: NewId;
  responder: Responder;
  documents: DocumentStore;
  allowPrivateTargets: boolean;
  twilio?: { accountSid: string; authToken: string } | undefined;
  /** Quiet time after the last inbound message before a burst is answered. */
  replyDelayMs: number;
  maxMessagesPerLeadPerDay: number;
  /** Bound on one model turn (all its tool rounds). */
  modelTimeoutMs: number;
  /** After failing this long, a turn is handed off (`ai_unavailable`) instead of retried. */
  unavailableAfterMs: number;
  /** First retry delay of a failing model: doubled per attempt to a minute, with full jitter. */
  retryBaseMs?: number;
  pollIntervalMs?: number;
  concurrency?: number;
  /** Context pages are fetched again this long after their last attempt; off when undefined. */
  contextRefreshMs?: number;
  onError?: (error: unknown) => void;
}

export interface RunningAgent {
  /** Fetches the context pages due again now (tests call it rather than wait). */
  refreshContext(): Promise<number>;
  /** Handles the turns due now (tests and the bench call it rather than wait for the poll). */
  work(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * How long one turn may take in all: its model call and the reads and the command around it. Past it
 * the turn is handed back and its slot goes to another.
 */
const turnBudgetMs = (modelTimeoutMs: number) => modelTimeoutMs + 30_000;

/**
 * The AI agent. Intake: a log consumer (checkpointed in Postgres, in the same transaction as what it
 * queues) turns `message.received` into a pending turn per conversation, due `replyDelayMs` after the
 * latest message of the burst, and `sequence.ai_step_requested` into a pending step (intake.ts). Work:
 * the shared worker runtime claims due turns with a lease and runs each under a time budget, at most a
 * quarter of its slots for one account (turns-queue.ts); the model is called outside any transaction
 * or lock, and the outcome decided under the account's lock against caught-up read models (a turn whose
 * messages were already handled writes nothing), then the answered messages leave the queue
 * (process-turn.ts, record.ts).
 */
export async function startAiAgent(deps: AgentDeps): Promise<RunningAgent> {
  const { db, clock } = deps;
  const onError = deps.onError ?? reportFailure('ai-agent');
  const concurrency = deps.concurrency ?? 8;
  const turnDeps: TurnDeps = {
    ...deps,
    onError,
    record: createRecorder({ ...deps, responderName: deps.responder.name }),
    turnsQueued: () => worker.wake(),
  };
  const budgetMs = turnBudgetMs(deps.modelTimeoutMs);
  const worker = createWorker({
    queue: turnsQueue({ ...turnDeps, retryBaseMs: deps.retryBaseMs ?? 2_000, budgetMs, concurrency }),
    clock,
    concurrency,
    fairness: turnFairness(concurrency),
    retry: turnRetry(deps.retryBaseMs ?? 2_000, deps.unavailableAfterMs),
    budgetMs,
    // Time makes delayed turns due (the worker sleeps until the next one), and other agents' intake is
    // seen only by looking.
    pollMs: deps.pollIntervalMs ?? 250,
    onError,
  });

  const consumer = await startLogConsumer({
    kafka: deps.kafka,
    db,
    codec: deps.codec,
    groupId: deps.groupId,
    topics: [deps.topics.account],
    checkpoints: 'ai_agent_checkpoints',
    handleBatch: async (topic, partition, records) => {
      await intakeBatch(deps, topic, partition, records);
      worker.wake();
    },
    // Only those are decoded (the header names the type): opening every other record's personal data
    // would be work for nothing.
    decodes: (type) => type !== undefined && intakeTypes.has(type as EventType),
    actsOn: (event) => intakeTypes.has(event.type),
    onCrash: (error) => onError(error),
  });
  worker.start();

  const refreshContext = () =>
    refreshContextUrls({
      db,
      commands: deps.commands,
      clock,
      allowPrivateTargets: deps.allowPrivateTargets,
      refreshMs: deps.contextRefreshMs ?? 24 * 3600_000,
    });
  // Once a minute is plenty for a schedule counted in hours.
  const refresher =
    deps.contextRefreshMs === undefined
      ? undefined
      : setInterval(() => void refreshContext().catch(onError), 60_000);

  return {
    work: () => worker.drain(),
    refreshContext,
    async stop() {
      if (refresher) clearInterval(refresher);
      await consumer.stop();
      await worker.stop();
    },
  };
}
