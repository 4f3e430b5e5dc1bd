import type { Database } from '@leadline/runtime';
import { sql, type Kysely } from 'kysely';

type Callback = (error: Error | null, result?: { current: number; ttl: number }) => void;

/**
 * A @fastify/rate-limit store shared by every command API instance: one fixed-window counter per key
 * in Postgres, moved by a single upsert on Postgres' clock, so N instances allow the documented
 * figure, not N times it. The table is unlogged: a crash forgets at most the current minute's counts.
 */
export function postgresRateLimitStore(db: Kysely<Database>) {
  return class PostgresRateLimitStore {
    incr(key: string, callback: Callback, timeWindow: number) {
      sql<{ current: number; ttl: number }>`
        insert into rate_limit_counters as counter (key, window_started_at, count)
        values (${key}, clock_timestamp(), 1)
        on conflict (key) do update set
          count = case when counter.window_started_at + ${timeWindow} * interval '1 millisecond' <= clock_timestamp()
                       then 1 else counter.count + 1 end,
          window_started_at = case when counter.window_started_at + ${timeWindow} * interval '1 millisecond' <= clock_timestamp()
                       then clock_timestamp() else counter.window_started_at end
        returning count as current,
          greatest(0, ceil(extract(epoch from (window_started_at + ${timeWindow} * interval '1 millisecond' - clock_timestamp())) * 1000))::integer as ttl`
        .execute(db)
        .then(({ rows }) => callback(null, rows[0]), callback);
    }

    child() {
      return this;
    }
  };
}
