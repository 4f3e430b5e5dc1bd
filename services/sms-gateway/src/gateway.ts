import type { EventOf } from '@leadline/events';
import {
  advanceCheckpoint,
  createWorker,
  freshRecords,
  isErased,
  reportFailure,
  startLogConsumer,
  systemTimers,
  watchNumberQueues,
  type LogConsumerDeps,
  type LogServiceDeps,
  type PositionedEvent,
  type Timers,
} from '@leadline/runtime';
import type { SmsSender } from '@leadline/telephony';
import { ERASED, EXPIRED, forgetErasedLead, forgetExpiredBodies } from './erasure';
import { enqueue, pendingPerNumber, releaseRegistrationHolds } from './outbox';
import { accountPaceSettings, drainSeconds, type PaceSettings } from './pacing';
import { outboxQueue } from './outbox-queue';
import { accountPass } from './pass';
import { reconciler } from './reconcile';
import { oneWorkerPerAccount, passBudgetMs, passRetryPolicy } from './send-policy';

export interface GatewayDeps extends LogServiceDeps {
  sender: SmsSender;
  /** Timers running at the clock's pace (the wall's by default): a pass waits on them for its number's slot. */
  timers?: Timers;
  /** Accounts worked on at once; one account's messages always go out one by one, in order. */
  concurrency?: number;
  /** Rows of one account decided at once (one lock, one wait for the read models). */
  decisionBatch?: number;
  /** Bound on one call to the provider; past it the send's outcome is unknown and reconcile settles it. */
  sendTimeoutMs?: number;
  /** A manual or compliance message older than this when its turn comes fails as `expired`. */
  maxQueueAgeMs?: number;
  leaseMs?: number;
  /**
   * The carriers' sending rule (see registrationEnforced): before an account's campaign is approved its
   * US long code sends only opt-out confirmations and HELP answers; the rest is held. Off by default.
   */
  registrationEnforced?: boolean;
  /** How often a row held for registration is decided again, besides the approval releasing it (10 min). */
  registrationRecheckMs?: number;
  /**
   * Each number's throughput and its brand's daily cap, where the account sets neither (its
   * `sending_rate`). The service always paces (SMS_MESSAGES_PER_SECOND, 1 by default); without it (tests
   * of other rules) messages go as fast as the provider takes them, unless their account sets a rate.
   */
  pacing?: PaceSettings;
  /**
   * How long a pass may wait for its number's next slot rather than hand its rows back (2 s by default:
   * two slots at 1 a second; 0 never waits). See accountPass.
   */
  slotWaitMs?: number;
  /** How long a send may take before its row counts as interrupted (well above the client's timeout). */
  sendingGraceMs?: number;
  /** How long an interrupted send waits for the provider's status callback before it counts as failed. */
  sendingTimeoutMs?: number;
  /** Longest idle wait for new rows when nothing wakes the workers, and how often reconcile runs. */
  pollIntervalMs?: number;
  /** How long stopping waits for passes under way before it hands their rows back (5 s by default). */
  drainMs?: number;
  onError?: (error: unknown) => void;
  onParked?: LogConsumerDeps['onParked'];
  parkedPollMs?: number;
}

export interface RunningGateway {
  /** Sends what is pending now (tests and the bench call it instead of waiting); returns the passes run. */
  dispatch(): Promise<number>;
  /** Settles interrupted sends from what the read models learned (status callbacks). */
  reconcile(): Promise<number>;
  stop(): Promise<void>;
}

const REQUEST = 'message.outbound_requested' as const;
const STEP_CHANGED = 'compliance.registration_step_changed' as const;

/** An account's campaign approved: what releases the messages held for registration. */
const campaignApproved = (event: { type: string; data?: unknown }) =>
  event.type === STEP_CHANGED &&
  (event as EventOf<typeof STEP_CHANGED>).data.step === 'campaign' &&
  (event as EventOf<typeof STEP_CHANGED>).data.status === 'approved';

/**
 * The only code that sends SMS. It consumes `message.outbound_requested` into its outbox (one row per
 * message id, so a redelivered request is never sent twice; its checkpoint is committed with the rows)
 * and sends on the runtime's worker: each item is one account's claimed rows, sent in order by one
 * worker at a time (see pass.ts for the pass itself, send-policy.ts for its rules).
 *
 * The one ambiguous window: the provider accepted the message but we did not record it (a crash, or an
 * error that leaves the outcome unknown, such as a timeout). Such a row stays `sending` and is never
 * sent again; `reconcile` settles it from the status callback, whose URL carries our message id:
 * once the callback is projected the row is recorded as sent; with no callback within
 * `sendingTimeoutMs` it is recorded as failed (`send_unconfirmed`). A row settled but not yet reported
 * (a crash between the two) is reported by `reconcile` too.
 */
/**
 * The requests among `records` that can be sent. One whose number reads as erased (a request consumed
 * again after its lead's key was destroyed) has no number to send to: it is never queued.
 */
const requestsOf = (records: readonly PositionedEvent[]) =>
  records.flatMap((record) =>
    record.event?.type === REQUEST && !isErased((record.event as EventOf<typeof REQUEST>).data.phone)
      ? [record.event as EventOf<typeof REQUEST>]
      : [],
  );

export async function startSmsGateway(deps: GatewayDeps): Promise<RunningGateway> {
  const { db, clock } = deps;
  const decisionBatch = deps.decisionBatch ?? 50;
  const leaseMs = deps.leaseMs ?? 60_000;
  const graceMs = deps.sendingGraceMs ?? 60_000;
  const timeoutMs = deps.sendingTimeoutMs ?? 10 * 60_000;
  const onError = deps.onError ?? reportFailure('sms-gateway');
  // The pass asks the worker it runs on (made below, for this pass) whether another account could start.
  let freeSlots = () => 0;
  const pass = accountPass({
    db,
    commands: deps.commands,
    sender: deps.sender,
    clock,
    decisionBatch,
    leaseMs,
    sendTimeoutMs: deps.sendTimeoutMs ?? 30_000,
    maxQueueAgeMs: deps.maxQueueAgeMs ?? 60 * 60_000,
    registrationEnforced: deps.registrationEnforced ?? false,
    registrationRecheckMs: deps.registrationRecheckMs ?? 10 * 60_000,
    pacing: deps.pacing,
    timers: deps.timers ?? systemTimers,
    slotWaitMs: deps.slotWaitMs ?? 2000,
    // Well inside the worker's budget for the pass (half the lease) and the claimed rows' lease.
    passHoldMs: leaseMs / 4,
    othersCanStart: () => freeSlots() > 0,
    onError,
    personalDataKeys: deps.personalDataKeys,
  });
  const queue = outboxQueue({ db, clock, leaseMs, decisionBatch, pass, onError });
  const worker = createWorker({
    queue,
    clock,
    concurrency: deps.concurrency ?? 4,
    fairness: oneWorkerPerAccount,
    retry: passRetryPolicy,
    budgetMs: passBudgetMs(leaseMs),
    drainMs: deps.drainMs ?? 5000,
    pollMs: deps.pollIntervalMs ?? 1000,
    onError,
  });

  freeSlots = () => worker.freeSlots();

  const reconcile = reconciler({ db, clock, commands: deps.commands, graceMs, timeoutMs, leaseMs });

  // A request that cannot be queued (it does not decode, or the outbox refuses it) is parked and its
  // account's later records held behind it; every other account's requests go on.
  const consumer = await startLogConsumer({
    kafka: deps.kafka,
    db,
    codec: deps.codec,
    groupId: deps.groupId,
    topics: [deps.topics.account],
    checkpoints: 'sms_gateway_checkpoints',
    // Only requests, erasures and registration steps matter here; the header spares decoding the rest.
    decodes: (type) => type === REQUEST || type === ERASED || type === EXPIRED || type === STEP_CHANGED,
    actsOn: (event) =>
      event.type === REQUEST || event.type === ERASED || event.type === EXPIRED || campaignApproved(event),
    // Kafka kept the gateway's position before Postgres did: an upgrade continues from there.
    startAtGroupOffsets: true,
    onParked: deps.onParked,
    parkedPollMs: deps.parkedPollMs,
    onCrash: (error) => onError(error),
    handleBatch: async (topic: string, partition: number, records: PositionedEvent[]) => {
      const last = records.at(-1);
      if (!last) return;
      const queued = await db.transaction().execute(async (trx) => {
        const fresh = await freshRecords(
          trx,
          'sms_gateway_checkpoints',
          topic,
          partition,
          records,
          clock.now(),
        );
        const requests = fresh.filter((record) => record.event?.type === REQUEST);
        // In log order: an erasure forgets the requests before it (this batch's too), not the ones
        // after it (the same number may be a new lead's since).
        let queuedUpTo = 0;
        for (const [index, record] of fresh.entries()) {
          if (record.event?.type !== ERASED && record.event?.type !== EXPIRED) continue;
          await enqueue(trx, requestsOf(fresh.slice(queuedUpTo, index)));
          if (record.event.type === ERASED) await forgetErasedLead(trx, deps.personalDataKeys, record.event);
          else await forgetExpiredBodies(trx, record.event);
          queuedUpTo = index + 1;
        }
        await enqueue(trx, requestsOf(fresh.slice(queuedUpTo)));
        // The campaign approved: what was held for it goes now (its next decision reads the approval).
        const approved = fresh.filter((record) => record.event && campaignApproved(record.event));
        const released = await releaseRegistrationHolds(
          trx,
          approved.flatMap((record) => record.event?.account_id ?? []),
        );
        await advanceCheckpoint(trx, 'sms_gateway_checkpoints', topic, partition, last.offset, clock.now());
        // Requests held behind a parked record and released by an operator wait for the poll: their
        // account's read models are still catching up with what was held, and a pass now would only fail.
        return requests.filter((record) => !record.replayed).length + released;
      });
      if (queued > 0) worker.wake();
    },
  });
  worker.start();
  const stopWatching = watchNumberQueues(async () => {
    const now = clock.now();
    return (await pendingPerNumber(db, now)).map((queue) => ({
      depth: queue.depth,
      drainSeconds: drainSeconds(queue, accountPaceSettings(deps.pacing, queue.rate), now),
    }));
  });
  const poll = setInterval(() => void reconcile().catch(onError), deps.pollIntervalMs ?? 1000);

  return {
    dispatch: () => worker.drain(),
    reconcile,
    async stop() {
      clearInterval(poll);
      stopWatching();
      await consumer.stop();
      await worker.stop();
    },
  };
}
