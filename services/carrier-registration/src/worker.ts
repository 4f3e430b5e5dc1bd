import { isDeepStrictEqual } from 'node:util';
import { findRegistrationRow, toRegistration } from '@leadline/decision-state';
import {
  decideRegistrationOutcome,
  nextRegistrationAction,
  type ActionOutcome,
  type CheckSchedule,
  type Registration,
  type RegistrationAction,
  type RetrySchedule,
} from '@leadline/domain';
import {
  createWorker,
  withTimeout,
  type Clock,
  type CommandBus,
  type Database,
  type RetryPolicy,
  type SecretBox,
  type WorkQueue,
} from '@leadline/runtime';
import { CarrierRefusal, type CarrierRegistration } from '@leadline/telephony';
import type { Kysely } from 'kysely';
import { carryOut } from './carry';
import { claimDue, finish, queueMeasure, reschedule, type WorkRow } from './queue';

export interface RegistrationWorkerDeps {
  /** The worker's own connections, for its queue (outside the commands' transactions). */
  db: Kysely<Database>;
  commands: CommandBus;
  carrier: CarrierRegistration;
  /** Opens the tax ids the API sealed (the same keys). */
  secrets: SecretBox;
  clock: Clock;
  /** Randomness of the retry backoff, in [0, 1). */
  random?: () => number;
  checkSchedule: CheckSchedule;
  retrySchedule: RetrySchedule;
  /** Bound on one unit of work at the provider. */
  callTimeoutMs: number;
  pollIntervalMs?: number;
  concurrency?: number;
  onError?: (error: unknown) => void;
}

export interface RunningRegistrationWorker {
  /**
   * Works on the registrations due now; returns how many it moved on (tests call it rather than wait).
   * Those the read models have not caught up with yet stay due, for the next poll.
   */
  work(): Promise<number>;
  stop(): Promise<void>;
}

/** Tax ids never reach a log or a reason: a provider's message may quote the number it refused. */
export const redactTaxIds = (text: string) => text.replace(/\b\d{2}-?\d{7}\b/g, '[tax id]');

/**
 * The carriers' registration, one account at a time, on the shared worker runtime: a due registration
 * is leased, its next action decided from the read model, carried out at the provider with nothing
 * open in the database and no lock held, and its outcome recorded as events under the account's lock,
 * with when to come back: at once, or when the step under review is next looked at (a Trust Hub
 * callback brings that forward). A failed call (or a failure to record) is retried by the worker's
 * policy with backoff; a refusal fails the step with the provider's reason.
 */
export function startRegistrationWorker(deps: RegistrationWorkerDeps): RunningRegistrationWorker {
  const { db, clock, commands } = deps;
  const pollIntervalMs = deps.pollIntervalMs ?? 1000;
  // Past the call's bound, with room to record: a lease never runs out under a live worker.
  const leaseMs = deps.callTimeoutMs * 2 + 30_000;
  const onError = deps.onError ?? ((error) => console.error('carrier-registration:', error));

  /** Waits until the account's partition is projected up to what is on the log now (an empty command). */
  async function projected(claim: WorkRow) {
    await commands.execute({
      stream: { topic: 'account', accountId: claim.account_id },
      context: {
        partnerId: claim.partner_id,
        actor: { kind: 'system', service: 'carrier-registration' },
        correlationId: claim.submission_id,
      },
      lockKeys: [],
      consistency: 'partition',
      decide: async () => ({ events: [], result: undefined }),
    });
  }

  /** The registration and the account as the read models have them, once they show this submission. */
  async function load(claim: WorkRow) {
    const read = () =>
      Promise.all([
        findRegistrationRow(db, claim.account_id),
        db
          .selectFrom('accounts')
          .select(['phone_number', 'company_name'])
          .where('id', '=', claim.account_id)
          .executeTakeFirst(),
      ]);
    let [row, account] = await read();
    // The submission is committed but not projected yet: wait for the projector once, then look again.
    if (row?.submission_id !== claim.submission_id || !account) {
      await projected(claim);
      [row, account] = await read();
    }
    return row?.submission_id === claim.submission_id && account ? { row, account } : undefined;
  }

  /** Moves one registration on; false when the read models have not caught up with it yet. */
  async function advance(claim: WorkRow): Promise<boolean> {
    const loaded = await load(claim);
    if (!loaded) return false;
    const { row, account } = loaded;
    const registration = toRegistration(row);
    const action = nextRegistrationAction(registration);
    if (!action) {
      await finish(db, claim);
      return true;
    }
    let outcome: ActionOutcome;
    try {
      outcome = await withTimeout('carrier registration', deps.callTimeoutMs, () =>
        carryOut(deps.carrier, registration, action, {
          accountId: claim.account_id,
          phoneNumber: account.phone_number,
          companyName: account.company_name,
          taxId: () =>
            deps.secrets.open(registration.tax_id.ciphertext, {
              partnerId: claim.partner_id,
              accountId: claim.account_id,
              field: 'tax_id',
            }),
        }),
      );
    } catch (error) {
      // A passing failure (a 5xx, a timeout) is the worker's to retry; a refusal fails the step.
      if (!(error instanceof CarrierRefusal)) throw new CallFailed(action.kind, error);
      outcome = { kind: 'refused', reason: redactTaxIds(error.message) };
    }
    await record(claim, registration, action, outcome);
    return true;
  }

  /** The outcome, as events under the account's lock, if nothing moved the registration meanwhile. */
  async function record(
    claim: WorkRow,
    planned: Registration,
    action: RegistrationAction,
    outcome: ActionOutcome,
  ) {
    await commands.execute({
      stream: { topic: 'account', accountId: claim.account_id },
      context: {
        partnerId: claim.partner_id,
        actor: { kind: 'system', service: 'carrier-registration' },
        correlationId: claim.submission_id,
      },
      lockKeys: [`account:${claim.account_id}`],
      consistency: 'partition',
      async decide(trx) {
        const now = clock.now();
        const work = await trx
          .selectFrom('carrier_registration_work')
          .selectAll()
          .where('account_id', '=', claim.account_id)
          .forUpdate()
          .executeTakeFirst();
        // A new submission replaced this one while the provider was called: its outcome is moot.
        if (work?.submission_id !== claim.submission_id) return { events: [], result: undefined };
        const row = await findRegistrationRow(trx, claim.account_id);
        const current = row && toRegistration(row);
        if (
          current?.submission_id !== planned.submission_id ||
          !isDeepStrictEqual(nextRegistrationAction(current), action)
        ) {
          await reschedule(trx, claim, now, now);
          return { events: [], result: undefined };
        }
        const decision = decideRegistrationOutcome(current, action, outcome, now, deps.checkSchedule);
        if (decision.nextAt) await reschedule(trx, claim, decision.nextAt, now);
        else await finish(trx, claim);
        return { events: decision.events, result: undefined };
      },
    });
  }

  const queue: WorkQueue<WorkRow, boolean> = {
    name: 'carrier_registrations',
    claim: ({ limit }) => claimDue(db, clock.now(), leaseMs, limit),
    run: (claim) => advance(claim),
    history: (claim) => ({ retriesDone: claim.failures }),
    async settle(claim, settlement) {
      const now = clock.now();
      // Still not projected after a wait: due again as it was, for the next look, no failure counted.
      if (settlement.kind === 'done') {
        if (!settlement.result) await reschedule(db, claim, claim.due_at, now);
        return;
      }
      const error = settlement.error;
      const message = redactTaxIds((error as Error).message ?? String(error));
      if (!(error instanceof CallFailed)) onError(error);
      const at =
        settlement.kind === 'retry' ? settlement.at : new Date(now.getTime() + deps.retrySchedule.maxMs);
      const what = error instanceof CallFailed ? error.action : 'recording';
      console.warn(
        `carrier-registration: ${what} for account ${claim.account_id} failed (${claim.failures + 1} in a row), ` +
          `again at ${at.toISOString()}: ${message}`,
      );
      await reschedule(db, claim, at, now, { failures: claim.failures + 1, message });
    },
    async release(claims, until) {
      const now = clock.now();
      for (const claim of claims) await reschedule(db, claim, until ?? now, now);
    },
    leaseEndOf: (claim) => claim.lease_until!,
    measure: () => queueMeasure(db, clock.now()),
  };
  const worker = createWorker({
    queue,
    clock,
    concurrency: deps.concurrency ?? 2,
    retry: registrationRetry(deps.retrySchedule),
    // The call's own bound and the recording after it, well inside the lease.
    budgetMs: deps.callTimeoutMs + 30_000,
    pollMs: pollIntervalMs,
    random: deps.random,
    onError,
  });
  worker.start();

  return {
    work: () => worker.drain(),
    stop: () => worker.stop(),
  };
}

/** A call to the provider that failed for a passing reason: retried with backoff. */
class CallFailed extends Error {
  override name = 'CallFailed';
  constructor(
    readonly action: string,
    override readonly cause: unknown,
  ) {
    super((cause as Error)?.message ?? String(cause));
  }
}

/**
 * Calls that failed for a passing reason, and failures to record an outcome, are tried again with the
 * delay doubling from `baseMs` to `maxMs`; half of it is spread at random (equal jitter), so the
 * registrations an outage interrupted do not all come back at once, yet the provider gets its time.
 */
export const registrationRetry = (schedule: RetrySchedule): RetryPolicy => ({
  backoff: { kind: 'exponential', baseMs: schedule.baseMs, maxMs: schedule.maxMs },
  jitter: 'equal',
  maxAttempts: Number.POSITIVE_INFINITY,
  retryable: 'all',
});
