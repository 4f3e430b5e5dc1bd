import { newUuid, type Database } from '@leadline/runtime';
import { sql, type Kysely } from 'kysely';
import type { AppDeps } from '../app-deps';

export type RetentionDeps = Pick<AppDeps, 'db' | 'commands' | 'clock' | 'personalDataKeys'>;

const DAY_MS = 86_400_000;

/**
 * The start of the oldest UTC day an account with `retentionDays` still keeps at `now`: content of
 * every earlier day has expired. Days, not hours: the keys seal content per UTC day.
 */
export function retentionCutoff(now: Date, retentionDays: number): Date {
  const today = Math.floor(now.getTime() / DAY_MS) * DAY_MS;
  return new Date(today - retentionDays * DAY_MS);
}

export interface ExpiredContent {
  accountId: string;
  expiredBefore: string;
  keysDestroyed: number;
}

/**
 * One retention pass: for each account with `retention_days`, if a key sealing content of a day
 * before its cutoff is still live, appends `account.content_expired` and then destroys those keys.
 * The event comes first so that every consumer forgets its clear copies: a pass that fails between
 * the two finds the keys live next time and does both again (consumers apply the event idempotently).
 * Instances running it at once take turns per account (an advisory lock); the one that finds the
 * account taken skips it, and its next pass finds nothing left to do. An account that fails is tried
 * again next pass; the others go on, and the failures are thrown together at the end.
 */
export async function runRetentionPass(deps: RetentionDeps): Promise<ExpiredContent[]> {
  const now = deps.clock.now();
  const accounts = await deps.db
    .selectFrom('accounts')
    .select(['id', 'partner_id', 'retention_days'])
    .where('retention_days', 'is not', null)
    .execute();
  const expired: ExpiredContent[] = [];
  const failures: unknown[] = [];
  for (const account of accounts) {
    const cutoff = retentionCutoff(now, account.retention_days!);
    const before = cutoff.toISOString().slice(0, 10);
    try {
      if (!(await deps.personalDataKeys.hasPeriodsBefore(account.id, before))) continue;
      const done = await expireAccount(deps.db, deps, account, cutoff, before, now);
      if (done) expired.push(done);
    } catch (error) {
      // One account's failure (its stream held, the log unavailable) does not keep the others' content.
      failures.push(error);
    }
  }
  if (failures.length > 0) {
    throw new AggregateError(failures, `The retention pass failed for ${failures.length} account(s)`);
  }
  return expired;
}

async function expireAccount(
  db: Kysely<Database>,
  deps: RetentionDeps,
  account: { id: string; partner_id: string },
  cutoff: Date,
  before: string,
  now: Date,
): Promise<ExpiredContent | undefined> {
  return db.transaction().execute(async (trx) => {
    const { rows } = await sql<{ locked: boolean }>`
      select pg_try_advisory_xact_lock(hashtextextended(${`retention:${account.id}`}, 0)) as locked
    `.execute(trx);
    if (!rows[0]?.locked) return undefined;
    // Under the lock: another instance may have expired the same days a moment ago.
    if (!(await deps.personalDataKeys.hasPeriodsBefore(account.id, before))) return undefined;
    await deps.commands.execute({
      stream: { topic: 'account', accountId: account.id },
      context: {
        partnerId: account.partner_id,
        actor: { kind: 'system', service: 'retention' },
        correlationId: newUuid(),
      },
      lockKeys: [`account:${account.id}`],
      // The decision reads nothing: the keys were checked above, under the pass's own lock.
      consistency: 'none',
      readYourWrites: false,
      decide: async () => ({
        events: [{ type: 'account.content_expired', data: { expired_before: cutoff.toISOString() } }],
        result: undefined,
      }),
    });
    const keysDestroyed = await deps.personalDataKeys.expirePeriods(account.id, before, now);
    return { accountId: account.id, expiredBefore: cutoff.toISOString(), keysDestroyed };
  });
}

/** How often the pass runs: content expires on UTC days, so within an hour of its day's end. */
export const RETENTION_PASS_MS = 3_600_000;

/**
 * Runs the pass every `intervalMs` (an hour), and once at start: a process restarted more often than
 * that would otherwise never run it. A failed pass is reported and done again at the next tick; a
 * pass still running when the next tick comes is not started twice.
 */
export function startRetentionSchedule(
  deps: RetentionDeps & {
    intervalMs?: number;
    onExpired: (expired: ExpiredContent[]) => void;
    onError: (error: unknown) => void;
  },
): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  const tick = () => {
    running ??= runRetentionPass(deps)
      .then((expired) => void (expired.length > 0 && deps.onExpired(expired)), deps.onError)
      .finally(() => (running = undefined));
  };
  const timer = setInterval(tick, deps.intervalMs ?? RETENTION_PASS_MS);
  timer.unref();
  const first = setTimeout(tick, 0);
  return {
    async stop() {
      clearInterval(timer);
      clearTimeout(first);
      await running;
    },
  };
}
