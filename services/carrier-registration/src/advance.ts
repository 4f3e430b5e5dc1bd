import { isDeepStrictEqual } from 'node:util';
import { findRegistrationRow, toRegistration } from '@leadline/decision-state';
import {
  decideRegistrationOutcome,
  nextRegistrationAction,
  type ActionOutcome,
  type CheckSchedule,
  type Registration,
  type RegistrationAction,
} from '@leadline/domain';
import { withTimeout, type Clock, type CommandBus, type Database, type SecretBox } from '@leadline/runtime';
import { CarrierRefusal, type CarrierRegistration } from '@leadline/telephony';
import type { Kysely } from 'kysely';
import { carryOut } from './carry';
import { finish, reschedule, type WorkRow } from './queue';
import { redactTaxIds } from './redact';

/** What moving one registration on needs. */
export interface AdvanceDeps {
  /** The worker's own connections, for its queue (outside the commands' transactions). */
  db: Kysely<Database>;
  commands: CommandBus;
  carrier: CarrierRegistration;
  /** Opens the tax ids the API sealed (the same keys). */
  secrets: SecretBox;
  clock: Clock;
  checkSchedule: CheckSchedule;
  /** Bound on one unit of work at the provider. */
  callTimeoutMs: number;
}

/** A call to the provider that failed for a passing reason: retried with backoff. */
export class CallFailed extends Error {
  override name = 'CallFailed';
  constructor(
    readonly action: string,
    override readonly cause: unknown,
  ) {
    super((cause as Error)?.message ?? String(cause));
  }
}

type Account = { phone_number: string; company_name: string };

/**
 * Moves one leased registration on: its next action decided from the read model, carried out at the
 * provider with nothing open in the database and no lock held, and its outcome recorded. False when
 * the read models have not caught up with the submission yet.
 */
export async function advanceRegistration(deps: AdvanceDeps, claim: WorkRow): Promise<boolean> {
  const loaded = await loadClaimed(deps, claim);
  if (!loaded) return false;
  const registration = toRegistration(loaded.row);
  const action = nextRegistrationAction(registration);
  if (!action) {
    await finish(deps.db, claim);
    return true;
  }
  const outcome = await callProvider(deps, claim, registration, action, loaded.account);
  await recordOutcome(deps, claim, registration, action, outcome);
  return true;
}

/**
 * A command on the account's stream, as this service, about the claimed submission. Without lock
 * keys it decides nothing and only waits for the projector to catch up with the partition.
 */
const accountCommand = (claim: WorkRow, lockKeys: string[]) => ({
  stream: { topic: 'account' as const, accountId: claim.account_id },
  context: {
    partnerId: claim.partner_id,
    actor: { kind: 'system' as const, service: 'carrier-registration' },
    correlationId: claim.submission_id,
  },
  lockKeys,
  consistency: 'partition' as const,
});

/** The registration and the account as the read models have them, once they show this submission. */
async function loadClaimed({ db, commands }: AdvanceDeps, claim: WorkRow) {
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
    // An empty command returns once the partition is projected up to what is on the log now.
    await commands.execute({
      ...accountCommand(claim, []),
      decide: async () => ({ events: [], result: undefined }),
    });
    [row, account] = await read();
  }
  return row?.submission_id === claim.submission_id && account ? { row, account } : undefined;
}

/**
 * Carries the action out at the provider, within the call's bound. A refusal is an outcome (the step
 * fails with the provider's reason); a passing failure (a 5xx, a timeout) is thrown as CallFailed,
 * for the worker to retry.
 */
async function callProvider(
  deps: AdvanceDeps,
  claim: WorkRow,
  registration: Registration,
  action: RegistrationAction,
  account: Account,
): Promise<ActionOutcome> {
  try {
    return await withTimeout('carrier registration', deps.callTimeoutMs, () =>
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
    if (!(error instanceof CarrierRefusal)) throw new CallFailed(action.kind, error);
    return { kind: 'refused', reason: redactTaxIds(error.message) };
  }
}

/**
 * The outcome, as events under the account's lock, if nothing moved the registration meanwhile; the
 * registration is then due again when the decision says (or done with).
 */
async function recordOutcome(
  { commands, clock, checkSchedule }: AdvanceDeps,
  claim: WorkRow,
  planned: Registration,
  action: RegistrationAction,
  outcome: ActionOutcome,
) {
  await commands.execute({
    ...accountCommand(claim, [`account:${claim.account_id}`]),
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
      // Something else moved the registration on meanwhile (a callback, another worker after a
      // lease ran out): this outcome answers a question no longer asked; look again at once.
      if (
        current?.submission_id !== planned.submission_id ||
        !isDeepStrictEqual(nextRegistrationAction(current), action)
      ) {
        await reschedule(trx, claim, now, now);
        return { events: [], result: undefined };
      }
      const decision = decideRegistrationOutcome(current, action, outcome, now, checkSchedule);
      if (decision.nextAt) await reschedule(trx, claim, decision.nextAt, now);
      else await finish(trx, claim);
      return { events: decision.events, result: undefined };
    },
  });
}
