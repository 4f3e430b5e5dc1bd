import { sql, type Kysely, type Migration } from 'kysely';

/** Tables in `public` that are not derived from the log (see OperationalTables). */
export const operationalMigrations: Record<string, Migration> = {
  '0001_partner_keys_local_numbers': {
    async up(db: Kysely<unknown>) {
      await sql`
        create table partner_api_keys (
          id text primary key,
          partner_id text not null,
          key_hash text not null unique,
          key_prefix text not null,
          created_at timestamptz not null default now(),
          revoked_at timestamptz
        );
        create table local_phone_numbers (
          phone_number text primary key,
          account_id text not null,
          allocated_at timestamptz not null default now()
        );
        create sequence local_phone_number_seq;
      `.execute(db);
    },
  },
  '0002_webhook_relay': {
    async up(db: Kysely<unknown>) {
      // The webhook relay's own state: where it is in the log, the lead names it resolves payloads
      // with, and the delivery schedule with its attempts log. Not a read model: it records what the
      // relay did (attempts, answers), which the log does not hold, so `rebuild` leaves it alone.
      await sql`
        create table webhook_relay_checkpoints (
          topic text not null,
          partition integer not null,
          next_offset bigint not null,
          updated_at timestamptz not null,
          primary key (topic, partition)
        );
        create table webhook_lead_names (
          account_id text not null,
          phone text not null,
          name text,
          first_name text,
          last_name text,
          primary key (account_id, phone)
        );
        create table webhook_deliveries (
          id text primary key,
          webhook_id text not null,
          partner_id text not null,
          account_id text,
          event_id text not null,
          event_type text not null,
          body text not null,
          status text not null,
          attempts integer not null default 0,
          retries_done integer not null default 0,
          next_attempt_at timestamptz,
          last_status_code integer,
          last_error text,
          created_at timestamptz not null,
          completed_at timestamptz,
          unique (webhook_id, event_id)
        );
        create index webhook_deliveries_due on webhook_deliveries (next_attempt_at) where status = 'pending';
        create index webhook_deliveries_log on webhook_deliveries (webhook_id, created_at desc, id desc);
        create table webhook_delivery_attempts (
          delivery_id text not null references webhook_deliveries (id) on delete cascade,
          attempt integer not null,
          attempted_at timestamptz not null,
          status_code integer,
          error text,
          duration_ms integer not null,
          response_excerpt text,
          primary key (delivery_id, attempt)
        );
      `.execute(db);
    },
  },
  '0003_messaging': {
    async up(db: Kysely<unknown>) {
      await sql`
        -- The SMS gateway's outbox: one row per requested message, ever, so a redelivered request
        -- is never sent again. pending -> sending -> sent | failed; a pending row is leased while it
        -- is worked on, and a row is marked sending (committed) before the provider is called.
        create table sms_outbox (
          message_id text primary key,
          account_id text not null,
          partner_id text not null,
          phone text not null,
          body text not null,
          source text not null,
          correlation_id text not null,
          causation_id text not null,
          state text not null default 'pending',
          lease_until timestamptz,
          sending_at timestamptz,
          provider_message_id text,
          created_at timestamptz not null default now(),
          updated_at timestamptz not null default now()
        );
        create index sms_outbox_pending on sms_outbox (created_at) where state = 'pending';
        create index sms_outbox_sending on sms_outbox (sending_at) where state = 'sending';
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
};
