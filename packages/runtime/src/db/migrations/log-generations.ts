import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import { STALE_APPEND_MS } from '../../stream-positions';

/** Operational tables of the log's topic generations (see log-generations.ts and log-migration.ts). */
export const logGenerationMigrations: Record<string, Migration> = {
  '0014_log_generations': {
    async up(db: Kysely<unknown>) {
      await sql`
        -- The log's topic generations: which one producers write to (active), the one being built
        -- (migrating), the one consumers are leaving (draining), and the ones whose topics are gone
        -- (retired). Generation 1 is the topics every deployment already has.
        create table log_generations (
          generation integer primary key,
          partitions jsonb not null,
          state text not null check (state in ('migrating', 'active', 'draining', 'retired')),
          transform text not null default 'identity',
          start_offsets jsonb,
          end_offsets jsonb,
          write_protected jsonb,
          created_at timestamptz not null default now(),
          fenced_at timestamptz,
          activated_at timestamptz,
          retired_at timestamptz
        );
        create unique index log_generations_one_active on log_generations ((true)) where state = 'active';
        create unique index log_generations_one_migrating on log_generations ((true)) where state = 'migrating';
        insert into log_generations (generation, partitions, state, activated_at)
        values (1, '{"account": 8, "partner": 2}', 'active', now());

        create table log_copy_progress (
          generation integer not null,
          topic text not null,
          partition integer not null,
          next_offset bigint not null,
          primary key (generation, topic, partition)
        );
        create table log_copy_chunks (
          generation integer not null,
          source_topic text not null,
          source_partition integer not null,
          source_first bigint not null,
          source_last bigint not null,
          target_topic text not null,
          target_partition integer not null,
          target_first bigint not null,
          source_offsets bigint[] not null
        );
        create index log_copy_chunks_by_source
          on log_copy_chunks (generation, source_topic, source_partition, source_last);
        create index log_copy_chunks_by_target
          on log_copy_chunks (generation, target_topic, target_partition, target_first);
      `.execute(db);
    },
  },
  '0019_enter_write_fence': {
    async up(db: Kysely<unknown>) {
      await sql`
        -- A writer's way into the log (see enterWriteFence in log-generations.ts), in one round trip:
        -- its stream's locks in the order given, the write fence shared (tried at once for a command,
        -- waited for up to wait_ms for plain facts), then the active generation. That last read is a
        -- query of its own inside a volatile function, so it takes a snapshot of its own, after the
        -- fence is held: it sees any cutover that ended before, which a single statement reading the
        -- generation beside its lock calls would not.
        create function enter_write_fence(stream_locks text[], wait_ms integer)
        returns table (
          open boolean, generation integer, partitions jsonb, state text, transform text,
          start_offsets jsonb, end_offsets jsonb
        )
        language plpgsql volatile
        set search_path = public
        as $fence$
        declare
          stream_lock text;
          timeout_before text := current_setting('lock_timeout');
        begin
          foreach stream_lock in array stream_locks loop
            perform pg_advisory_xact_lock(hashtextextended(stream_lock, 0));
          end loop;
          if wait_ms <= 0 then
            if not pg_try_advisory_xact_lock_shared(hashtextextended('leadline.log-fence', 0)) then
              return query select false, null::integer, null::jsonb, null::text, null::text,
                null::jsonb, null::jsonb;
              return;
            end if;
          else
            -- The bound is for this wait only (lock_not_available past it).
            perform set_config('lock_timeout', wait_ms || 'ms', true);
            perform pg_advisory_xact_lock_shared(hashtextextended('leadline.log-fence', 0));
            perform set_config('lock_timeout', timeout_before, true);
          end if;
          return query select true, g.generation, g.partitions, g.state, g.transform, g.start_offsets,
            g.end_offsets
          from log_generations g where g.state = 'active';
        end
        $fence$;
      `.execute(db);
    },
  },
  '0022_stream_positions': {
    async up(db: Kysely<unknown>) {
      await sql`
        -- Where each stream's last acknowledged append went, and the appends in flight (see
        -- stream-positions.ts): a command whose stream has no append in flight waits for the projector
        -- to pass its stream's last append instead of asking Kafka for the partition's end. Unlogged:
        -- an intent is written before every append and costs no WAL flush. Crash recovery empties
        -- unlogged tables (a promoted standby has them empty), and stream_positions_kept with them,
        -- which is how a command knows that intents may have been lost.
        create unlogged table stream_positions (
          stream_key text primary key,
          topic text not null,
          partition integer not null,
          next_offset bigint not null,
          last_sent_at timestamptz not null
        );
        create unlogged table stream_appends (
          append_id uuid primary key,
          stream_key text not null,
          started_at timestamptz not null default now()
        );
        create index stream_appends_by_stream on stream_appends (stream_key);
        create unlogged table stream_positions_kept (
          only_row boolean primary key default true check (only_row),
          kept_since timestamptz not null
        );
        -- Writers of the previous version append without intents: a deployment that has partners
        -- (and so a log) trusts no position until they have stopped and their appends have landed.
        insert into stream_positions_kept (kept_since)
        select case when exists (select 1 from partner_api_keys)
          then now() + make_interval(secs => ${sql.lit(STALE_APPEND_MS / 1000)})
          else '-infinity'::timestamptz end;

        -- The fence as before, and then, for a stream given, where its last acknowledged append went
        -- (when that can be trusted) and whether an append of it is in flight: read in a query of their
        -- own after the stream's locks are held, so they see what the previous holder committed.
        drop function enter_write_fence(text[], integer);
        create function enter_write_fence(
          stream_locks text[], wait_ms integer, stream text default null, stale_ms integer default 0
        )
        returns table (
          open boolean, generation integer, partitions jsonb, state text, transform text,
          start_offsets jsonb, end_offsets jsonb,
          stream_topic text, stream_partition integer, stream_next_offset bigint, stream_appending boolean
        )
        language plpgsql volatile
        set search_path = public
        as $fence$
        declare
          stream_lock text;
          timeout_before text := current_setting('lock_timeout');
        begin
          foreach stream_lock in array stream_locks loop
            perform pg_advisory_xact_lock(hashtextextended(stream_lock, 0));
          end loop;
          if wait_ms <= 0 then
            if not pg_try_advisory_xact_lock_shared(hashtextextended('leadline.log-fence', 0)) then
              return query select false, null::integer, null::jsonb, null::text, null::text,
                null::jsonb, null::jsonb, null::text, null::integer, null::bigint, null::boolean;
              return;
            end if;
          else
            -- The bound is for this wait only (lock_not_available past it).
            perform set_config('lock_timeout', wait_ms || 'ms', true);
            perform pg_advisory_xact_lock_shared(hashtextextended('leadline.log-fence', 0));
            perform set_config('lock_timeout', timeout_before, true);
          end if;
          if stream is not null and not exists (select 1 from stream_positions_kept) then
            -- Emptied by a crash: intents of appends sent before it may be gone, so no position is
            -- trusted until those appends have landed and an append sent after that was recorded.
            insert into stream_positions_kept (kept_since) values (now()) on conflict do nothing;
          end if;
          return query select true, g.generation, g.partitions, g.state, g.transform, g.start_offsets,
            g.end_offsets, p.topic, p.partition, p.next_offset,
            exists (select 1 from stream_appends a where a.stream_key = stream)
          from log_generations g
          left join (
            stream_positions p join stream_positions_kept k
              on p.last_sent_at >= k.kept_since + make_interval(secs => stale_ms / 1000.0)
          ) on p.stream_key = stream
          where g.state = 'active';
        end
        $fence$;

        -- Records acknowledged appends (see recordAppends in stream-positions.ts). PL/pgSQL, so its
        -- statement is planned once per connection, not on every append.
        create function record_stream_appends(
          append_ids uuid[], stream_keys text[], topics text[], partitions integer[], next_offsets bigint[],
          stale_ms integer
        ) returns void
        language plpgsql volatile
        set search_path = public
        as $record$
        begin
          with ours as (
            delete from stream_appends where append_id = any(append_ids)
            returning stream_key, started_at
          ), stale as (
            delete from stream_appends
            where stream_key = any(stream_keys)
              and started_at < (select min(started_at) from ours) - make_interval(secs => stale_ms / 1000.0)
          )
          insert into stream_positions as p (stream_key, topic, partition, next_offset, last_sent_at)
          select distinct on (a.stream_key) a.stream_key, a.topic, a.partition, a.next_offset,
            -- An intent gone (emptied by a crash) says nothing of when its append was sent.
            coalesce((select max(o.started_at) from ours o where o.stream_key = a.stream_key), '-infinity')
          from unnest(stream_keys, topics, partitions, next_offsets) as a (stream_key, topic, partition, next_offset)
          order by a.stream_key, a.next_offset desc
          on conflict (stream_key) do update set
            topic = excluded.topic,
            partition = excluded.partition,
            next_offset = case when p.topic = excluded.topic and p.partition = excluded.partition
              then greatest(p.next_offset, excluded.next_offset) else excluded.next_offset end,
            last_sent_at = case when p.topic = excluded.topic and p.partition = excluded.partition
              then greatest(p.last_sent_at, excluded.last_sent_at) else excluded.last_sent_at end;
        end
        $record$;
      `.execute(db);
    },
  },
};
