import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

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
};
