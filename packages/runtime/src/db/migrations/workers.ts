import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** The workers' parked records and the sequencer's and the AI agent's queues and checkpoints. */
export const workerOperationalMigrations: Record<string, Migration> = {
  '0004_parked_records': {
    async up(db: Kysely<unknown>) {
      // The same for the consumers whose state is operational (the webhook relay, the SMS gateway);
      // and the records an operator chose to skip, kept outside any read-model schema so that a
      // rebuild skips them too and reproduces what the live projector did.
      await sql`
        create table parked_records (
          consumer text not null,
          topic text not null,
          partition integer not null,
          "offset" bigint not null,
          stream_key text,
          event_type text,
          value bytea,
          error text,
          status text not null,
          parked_at timestamptz not null,
          updated_at timestamptz not null,
          retry_requested_at timestamptz,
          primary key (consumer, topic, partition, "offset")
        );
        create index parked_records_pending on parked_records (consumer, stream_key)
          where status in ('parked', 'held');
        create table skipped_records (
          consumer text not null,
          topic text not null,
          partition integer not null,
          "offset" bigint not null,
          reason text not null,
          skipped_at timestamptz not null,
          primary key (consumer, topic, partition, "offset")
        );
      `.execute(db);
    },
  },
  '0007_sequencer': {
    async up(db: Kysely<unknown>) {
      await sql`
        -- The sequencer's claims on due steps: a step claimed by one sequencer is skipped by the
        -- others until its lease runs out (a crashed sequencer's claims run out likewise).
        create table sequencer_leases (
          enrollment_id text not null,
          step_order integer not null,
          lease_until timestamptz not null,
          primary key (enrollment_id, step_order)
        );
      `.execute(db);
    },
  },
  '0008_ai_agent': {
    async up(db: Kysely<unknown>) {
      await sql`
        create table ai_agent_checkpoints (
          topic text not null,
          partition integer not null,
          next_offset bigint not null,
          updated_at timestamptz not null,
          primary key (topic, partition)
        );
        -- Work the AI agent owes: one row per conversation with unanswered inbound messages (id
        -- 'inbound:<account>:<phone>') or per requested AI sequence step ('step:<enrollment>:<order>').
        -- Claimed with a lease; the model is called outside any transaction.
        create table ai_pending_turns (
          id text primary key,
          kind text not null,
          account_id text not null,
          partner_id text not null,
          phone text not null,
          due_at timestamptz not null,
          lease_until timestamptz,
          attempts integer not null default 0,
          first_failure_at timestamptz,
          step jsonb,
          causation_id text,
          correlation_id text
        );
        create index ai_pending_turns_due on ai_pending_turns (due_at);
        create table ai_pending_messages (
          message_id text primary key,
          turn_id text not null,
          account_id text not null,
          phone text not null,
          body text not null,
          media jsonb not null,
          received_at timestamptz not null
        );
        create index ai_pending_messages_turn on ai_pending_messages (turn_id, received_at);
        -- Documents (MMS photos, PDFs): metadata here, bytes in the document store (a directory by
        -- default, or the bytes column when the store is Postgres).
        create table documents (
          id text primary key,
          account_id text not null,
          phone text not null,
          message_id text not null,
          media_index integer not null,
          content_type text not null,
          file_size integer not null,
          text_content text,
          bytes bytea,
          created_at timestamptz not null,
          unique (message_id, media_index)
        );
      `.execute(db);
    },
  },
  '0012_ai_pending_message_positions': {
    async up(db: Kysely<unknown>) {
      await sql`
        -- Where each queued inbound message is on the log (its partition, and the offset just after
        -- it), so the agent waits for the projector to pass it from the projector's own
        -- notifications instead of polling the read models. Null for rows queued before this column.
        alter table ai_pending_messages
          add column log_partition integer,
          add column log_next_offset bigint;
      `.execute(db);
    },
  },
  '0013_sequencer_checkpoints': {
    async up(db: Kysely<unknown>) {
      await sql`
        -- Where the sequencer is on the log (it follows the AI agent's answers), as the other
        -- consumers keep theirs. Empty at first: the sequencer fills it from its consumer group's
        -- committed offsets on start (see startLogConsumer's startAtGroupOffsets).
        create table sequencer_checkpoints (
          topic text not null,
          partition integer not null,
          next_offset bigint not null,
          updated_at timestamptz not null,
          primary key (topic, partition)
        );
      `.execute(db);
    },
  },
  '0020_finish_ai_turn': {
    async up(db: Kysely<unknown>) {
      await sql`
        -- Takes an answered turn out of the AI agent's queue with the messages it answered, in one
        -- round trip (finishTurn in the AI agent's turns.ts). The turn's row is locked first; every
        -- statement after it is a query of its own inside a volatile function, so it takes a snapshot
        -- of its own after the lock: a message whose intake held the row (it upserts it) is committed
        -- by then and seen, and the turn stays for it as the next burst (the answer is true).
        create function finish_ai_turn(finished_turn text, answered text[], keep_for_next_burst boolean)
        returns boolean
        language plpgsql volatile
        set search_path = public
        as $finish$
        begin
          perform 1 from ai_pending_turns t where t.id = finished_turn for update;
          delete from ai_pending_messages m where m.message_id = any(answered);
          if keep_for_next_burst
            and exists (select 1 from ai_pending_messages m where m.turn_id = finished_turn) then
            update ai_pending_turns t set lease_until = null, attempts = 0, first_failure_at = null
            where t.id = finished_turn;
            return true;
          end if;
          delete from ai_pending_turns t where t.id = finished_turn;
          return false;
        end
        $finish$;
      `.execute(db);
    },
  },
};
