import type { Database } from '@leadline/runtime';
import { sql, type Kysely } from 'kysely';

type Callback = (error: Error | null, result?: { current: number; ttl: number }) => void;

/**
 * The most of a window's budget one instance leases at once (at least one request): what a partner
 * may be refused early per instance, in tokens another instance leased and has not used yet.
 */
export const MAX_LEASE_SHARE = 0.01;
/** A lease taken sooner than this after the previous one is twice its size; a later one half. */
const LEASE_INTERVAL_MS = 250;
/** Budgets kept before those of past windows are swept. */
const SWEEP_ABOVE = 10_000;

/** One key's budget at this instance, for the shared window it was leased in. */
interface Budget {
  /** The shared window's start, as Postgres keeps it: a lease from another window starts afresh. */
  window: string;
  endsAt: number;
  /** Requests this instance may still allow in the window without asking. */
  tokens: number;
  /** The shared count after this instance's last lease (every instance's leased tokens). */
  counted: number;
  /** The shared budget is spent: nothing more is leased until the window ends. */
  exhausted: boolean;
  leaseSize: number;
  leasedAt: number;
  leasing: Promise<void> | undefined;
}

const newBudget = (): Budget => ({
  window: '',
  endsAt: 0,
  tokens: 0,
  counted: 0,
  exhausted: false,
  leaseSize: 1,
  leasedAt: -Infinity,
  leasing: undefined,
});

/**
 * A @fastify/rate-limit store shared by every command API instance: one fixed-window counter per key
 * in Postgres (an unlogged table, on Postgres' clock), from which each instance leases tokens and
 * spends them in memory. Every token is granted once, so N instances together never allow more than
 * the documented figure in a window. A lease grows (doubling, up to `MAX_LEASE_SHARE` of the limit)
 * while requests come faster than `LEASE_INTERVAL_MS` a lease, so a busy key costs a few writes a
 * second per instance instead of one per request; a limit under 200 leases one token at a time,
 * counted exactly as before. The price: a partner may be refused up to `MAX_LEASE_SHARE` of its limit
 * early per instance (tokens another instance holds), and a crash forgets the current window's counts.
 */
export function postgresRateLimitStore(db: Kysely<Database>) {
  const budgets = new Map<string, Budget>();

  async function lease(key: string, budget: Budget, timeWindow: number, max: number) {
    const now = performance.now();
    const cap = Math.max(1, Math.floor(max * MAX_LEASE_SHARE));
    const size = Math.min(
      cap,
      now - budget.leasedAt < LEASE_INTERVAL_MS
        ? budget.leaseSize * 2
        : Math.max(1, Math.floor(budget.leaseSize / 2)),
    );
    budget.leaseSize = size;
    budget.leasedAt = now;
    const { rows } = await sql<{ count: number; ttl: number; window: string }>`
      insert into rate_limit_counters as counter (key, window_started_at, count)
      values (${key}, clock_timestamp(), ${size})
      on conflict (key) do update set
        count = case when counter.window_started_at + ${timeWindow} * interval '1 millisecond' <= clock_timestamp()
                     then ${size} else counter.count + ${size} end,
        window_started_at = case when counter.window_started_at + ${timeWindow} * interval '1 millisecond' <= clock_timestamp()
                     then clock_timestamp() else counter.window_started_at end
      returning count, window_started_at::text as window,
        greatest(0, ceil(extract(epoch from (window_started_at + ${timeWindow} * interval '1 millisecond' - clock_timestamp())) * 1000))::integer as ttl`.execute(
      db,
    );
    const { count, ttl, window } = rows[0]!;
    // The count went from count - size to count: what of that was still under the limit is ours.
    const granted = Math.max(0, Math.min(size, max - (count - size)));
    if (window !== budget.window) {
      budget.window = window;
      budget.tokens = 0;
      budget.exhausted = false;
    }
    budget.endsAt = performance.now() + ttl;
    budget.tokens += granted;
    budget.counted = count;
    if (granted < size) budget.exhausted = true;
  }

  function startLease(key: string, budget: Budget, timeWindow: number, max: number): Promise<void> {
    budget.leasing ??= lease(key, budget, timeWindow, max).finally(() => {
      budget.leasing = undefined;
    });
    return budget.leasing;
  }

  function sweep(now: number) {
    if (budgets.size <= SWEEP_ABOVE) return;
    for (const [key, budget] of budgets) if (budget.endsAt <= now && !budget.leasing) budgets.delete(key);
  }

  /** Spends a token if the budget allows an answer now: allowed, refused, or undefined (lease first). */
  function spend(key: string, budget: Budget, timeWindow: number, max: number) {
    const now = performance.now();
    if (budget.endsAt <= now) {
      budget.tokens = 0;
      budget.exhausted = false;
    }
    const ttl = Math.max(0, Math.ceil(budget.endsAt - now));
    if (budget.tokens > 0) {
      budget.tokens--;
      // Lease ahead while tokens remain, so a busy key's requests rarely wait for one (not for small
      // limits, whose single tokens are leased exactly when a request needs one).
      if (!budget.exhausted && budget.leaseSize > 1 && budget.tokens < budget.leaseSize / 2)
        void startLease(key, budget, timeWindow, max).catch(() => undefined);
      return { current: Math.min(max, budget.counted) - budget.tokens, ttl };
    }
    if (budget.exhausted) return { current: max + 1, ttl };
    return undefined;
  }

  return class PostgresRateLimitStore {
    incr(key: string, callback: Callback, timeWindow: number, max: number) {
      let budget = budgets.get(key);
      if (!budget) {
        sweep(performance.now());
        budget = newBudget();
        budgets.set(key, budget);
      }
      const answer = spend(key, budget, timeWindow, max);
      if (answer) return callback(null, answer);
      const owned = budget;
      const attempt = (): Promise<void> =>
        startLease(key, owned, timeWindow, max).then(() => {
          const next = spend(key, owned, timeWindow, max);
          // Other requests spent what the lease brought: lease again (each lease moves the shared count).
          if (next) callback(null, next);
          else return attempt();
        });
      attempt().catch((error: unknown) =>
        callback(error instanceof Error ? error : new Error(String(error))),
      );
    }

    child() {
      return this;
    }
  };
}
