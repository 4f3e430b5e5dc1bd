import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** The SMS gateway's outbox and checkpoints, and the receipts of inbound SMS and their opt-outs. */
export const messagingOperationalMigrations: Record<string, Migration> = {
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
  '0011_sms_outbox_reports': {
    async up(db: Kysely<unknown>) {
      // The gateway settles a row (commits its terminal state and the event that reports it) before it
      // appends that event, so a message reported failed is never sent later; \`reported_at\` stays
      // null until the event is on the log, and a crash in between is re-reported. \`requested_at\` and
      // \`expirable\` let a manual request that waited too long expire; rows queued before this
      // migration keep going out as before.
      await sql`
        alter table sms_outbox
          add column requested_at timestamptz,
          add column expirable boolean not null default false,
          add column report jsonb,
          add column reported_at timestamptz;
        update sms_outbox set reported_at = updated_at where state in ('sent', 'failed');
        create index sms_outbox_unreported on sms_outbox (updated_at)
          where report is not null and reported_at is null;
      `.execute(db);
    },
  },
  '0014_sms_gateway_checkpoints': {
    async up(db: Kysely<unknown>) {
      await sql`
        -- The SMS gateway reads the log through the shared consumer: its progress per partition is
        -- committed with the outbox rows it queued. Empty at first: a gateway upgraded from one that
        -- kept its offsets in Kafka fills it from its consumer group's committed offsets on start
        -- (startLogConsumer's startAtGroupOffsets); the outbox's primary key makes a repeat a no-op.
        create table sms_gateway_checkpoints (
          topic text not null,
          partition integer not null,
          next_offset bigint not null,
          updated_at timestamptz not null,
          primary key (topic, partition)
        );
        -- The claim a row is leased under: only that claim marks it in flight or hands it back, so a
        -- worker that gave up on an account (past its time budget) never sends beside the next one.
        alter table sms_outbox add column claim_token text;
      `.execute(db);
    },
  },
  '0011_inbound_receipts': {
    async up(db: Kysely<unknown>) {
      await sql`
        -- Inbound SMS are kept as raw facts first and decided later by the inbound decider. One row
        -- per Twilio MessageSid across every account: the first account to claim a SID owns it, so
        -- the same SID posted to two accounts is stored once. decided_at: the decision was made.
        create table inbound_receipts (
          message_sid text primary key,
          account_id text not null,
          received_at timestamptz not null,
          decided_at timestamptz
        );
        create table inbound_decider_checkpoints (
          topic text not null,
          partition integer not null,
          next_offset bigint not null,
          updated_at timestamptz not null,
          primary key (topic, partition)
        );
        -- An opt-out answered to Twilio but not yet decided: every send path refuses the number
        -- until the decision (conversations.opted_out) is projected and the row removed.
        create table opt_out_guards (
          account_id text not null,
          phone text not null,
          message_sid text not null,
          created_at timestamptz not null,
          primary key (account_id, phone)
        );
      `.execute(db);
    },
  },
};
