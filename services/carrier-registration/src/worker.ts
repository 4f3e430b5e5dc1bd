import { isDeepStrictEqual } from 'node:util';
import { findRegistrationRow, toRegistration } from '@leadline/decision-state';
import {
  decideRegistrationOutcome,
  nextRegistrationAction,
  retryAt,
  type ActionOutcome,
  type CheckSchedule,
  type Registration,
  type RegistrationAction,
  type RetrySchedule,
} from '@leadline/domain';
import {
  watchQueue,
  withTimeout,
  type Clock,
  type CommandBus,
  type Database,
  type SecretBox,
} from '@leadline/runtime';
import { CarrierRefusal, type CarrierRegistration } from '@leadline/telephony';
import type { Kysely } from 'kysely';
import { carryOut } from './carry';
import { claimDue, finish, queueMeasure, release, reschedule, type WorkRow } from './queue';

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
 * The carriers' registration, one account at a time: a due registration is leased, its next action
 * decided from the read model, carried out at the provider with nothing open in the database and no
 * lock held, and its outcome recorded as events under the account's lock, with when to come back: at
 * once, when the step under review is next looked at (a Trust Hub callback brings that forward), or,
 * after a failed call, with backoff. A refusal fails the step with the provider's reason.
 */
export function startRegistrationWorker(deps: RegistrationWorkerDeps): RunningRegistrationWorker {
  const { db, clock, commands } = deps;
  const random = deps.random ?? Math.random;
  const pollIntervalMs = deps.pollIntervalMs ?? 1000;
  const concurrency = deps.concurrency ?? 2;
  // Past the call's bound, with room to record: a lease never runs out under a live worker.
  const leaseMs = deps.callTimeoutMs * 2 + 30_000;
  const onError = deps.onError ?? ((error) => console.error('carrier-registration:', error));
  const unwatchQueue = watchQueue('carrier_registrations', () => queueMeasure(db, clock.now()));

  /** Moves one registration on; false when the read models have not caught up with it yet. */
  async function advance(claim: WorkRow): Promise<boolean> {
    const row = await findRegistrationRow(db, claim.account_id);
    const account = await db
      .selectFrom('accounts')
      .select(['phone_number', 'company_name'])
      .where('id', '=', claim.account_id)
      .executeTakeFirst();
    if (!row || row.submission_id !== claim.submission_id || !account) {
      // The submission is committed but not projected yet: still due, at the next poll.
      await release(db, claim);
      return false;
    }
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
      if (!(error instanceof CarrierRefusal)) {
        const failures = claim.failures + 1;
        const message = redactTaxIds((error as Error).message ?? String(error));
        const later = retryAt(failures, clock.now(), random(), deps.retrySchedule);
        console.warn(
          `carrier-registration: ${action.kind} for account ${claim.account_id} failed (${failures} in a row), ` +
            `again at ${later.toISOString()}: ${message}`,
        );
        await reschedule(db, claim, later, clock.now(), { failures, message });
        return true;
      }
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

  async function work(): Promise<number> {
    const claims = await claimDue(db, clock.now(), leaseMs, concurrency);
    const advanced = await Promise.all(
      claims.map((claim) =>
        advance(claim).catch(async (error: unknown) => {
          // The log or the database failed us (recording, not the provider): the registration is given
          // back with backoff; if even that fails, its lease runs out and it is due again.
          onError(error);
          const failures = claim.failures + 1;
          const message = redactTaxIds((error as Error).message ?? String(error));
          const later = retryAt(failures, clock.now(), random(), deps.retrySchedule);
          await reschedule(db, claim, later, clock.now(), { failures, message }).catch(onError);
          return true;
        }),
      ),
    );
    return advanced.filter(Boolean).length;
  }

  let stopped = false;
  let wake: (() => void) | undefined;
  const loop = (async () => {
    while (!stopped) {
      const done = await work().catch((error: unknown) => {
        onError(error);
        return 0;
      });
      if (done > 0 || stopped) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, pollIntervalMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  })();

  return {
    work,
    async stop() {
      stopped = true;
      wake?.();
      await loop;
      unwatchQueue();
    },
  };
}
