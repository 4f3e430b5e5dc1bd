import type { Clock, Database } from '@leadline/runtime';
import type { NumberInventory, ProvisionedForAccount } from '@leadline/telephony';
import type { Kysely } from 'kysely';

/**
 * How long after its purchase a number with no account may be taken for an orphan: far past any
 * creation still running (each call on that path is bounded by seconds) and its projection.
 */
export const ORPHAN_NUMBER_GRACE_MS = 60 * 60_000;
/** How often a command API looks for orphaned numbers. */
export const ORPHAN_NUMBER_SWEEP_MS = 15 * 60_000;

/**
 * Releases numbers bought for accounts that were never created. A creation buys its number before its
 * command runs and gives it back if the command fails; a process that dies in between, or a give-back
 * that fails, leaves a number we pay for that no account holds. A number is kept when any account
 * reserves it, when the account it was bought for exists (a number released by its account stays ours,
 * for a partner to supply to another), and for `graceMs` after its purchase. Several command APIs may
 * sweep at once: releasing a number already gone is no error.
 */
export async function releaseOrphanNumbers(deps: {
  db: Kysely<Database>;
  numbers: NumberInventory;
  clock: Clock;
  graceMs?: number;
}): Promise<ProvisionedForAccount[]> {
  const { db, numbers, clock } = deps;
  const boughtBefore = clock.now().getTime() - (deps.graceMs ?? ORPHAN_NUMBER_GRACE_MS);
  const old = (await numbers.listProvisioned()).filter(
    (number) => number.provisionedAt.getTime() < boughtBefore,
  );
  if (old.length === 0) return [];
  const [reserved, accounts] = await Promise.all([
    db
      .selectFrom('phone_number_reservations')
      .select('phone_number')
      .where(
        'phone_number',
        'in',
        old.map((number) => number.phoneNumber),
      )
      .execute(),
    db
      .selectFrom('accounts')
      .select('id')
      .where(
        'id',
        'in',
        old.map((number) => number.accountId),
      )
      .execute(),
  ]);
  const held = new Set(reserved.map((row) => row.phone_number));
  const existing = new Set(accounts.map((row) => row.id));
  const orphans = old.filter((number) => !held.has(number.phoneNumber) && !existing.has(number.accountId));
  for (const orphan of orphans) await numbers.releaseNumber(orphan);
  return orphans;
}

/** Runs `releaseOrphanNumbers` every `intervalMs`; `stop` ends it. */
export function startOrphanNumberSweep(
  deps: Parameters<typeof releaseOrphanNumbers>[0] & {
    intervalMs?: number;
    onReleased: (orphans: ProvisionedForAccount[]) => void;
    onError: (error: unknown) => void;
  },
): { stop(): void } {
  const timer = setInterval(() => {
    releaseOrphanNumbers(deps).then(
      (orphans) => orphans.length > 0 && deps.onReleased(orphans),
      deps.onError,
    );
  }, deps.intervalMs ?? ORPHAN_NUMBER_SWEEP_MS);
  // A sweep in flight does not keep a stopping process alive.
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
