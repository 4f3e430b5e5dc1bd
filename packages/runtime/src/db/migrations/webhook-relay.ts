import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** The webhook relay's deliveries, their attempts, its outbox and its backfill of new webhooks. */
export const webhookRelayOperationalMigrations: Record<string, Migration> = {
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
  '0011_webhook_relay_leases_outbox_backfill': {
    async up(db: Kysely<unknown>) {
      await sql`
        -- A claimed delivery is leased, not locked: the claim commits before the POST, and a lease
        -- that runs out (its relay died) makes the delivery due again.
        alter table webhook_deliveries add column leased_until timestamptz, add column claim_token text;
        create index webhook_deliveries_leased on webhook_deliveries (webhook_id)
          where status = 'pending' and leased_until is not null;
        create index webhook_deliveries_pending_webhook on webhook_deliveries (webhook_id, next_attempt_at)
          where status = 'pending';
        -- What the relay must still append to the log (webhook.disabled, webhook.delivery_failed),
        -- written in the transaction that decided it, so a crash before the append loses nothing.
        create table webhook_relay_outbox (
          id text primary key,
          partner_id text not null,
          correlation_id text not null,
          event jsonb not null,
          created_at timestamptz not null,
          leased_until timestamptz,
          appended_at timestamptz
        );
        create index webhook_relay_outbox_pending on webhook_relay_outbox (created_at) where appended_at is null;
        -- Every mapped webhook event the relay fanned out, kept for a while, so a webhook whose
        -- registration reaches the read model after the fan-out still gets the events that followed it.
        create table webhook_relay_events (
          event_id text primary key,
          partner_id text not null,
          account_id text,
          event_type text not null,
          occurred_at timestamptz not null,
          body text not null,
          relayed_at timestamptz not null
        );
        create index webhook_relay_events_partner on webhook_relay_events (partner_id, occurred_at);
        create index webhook_relay_events_relayed on webhook_relay_events (relayed_at);
        -- Webhooks whose back-fill ran; a webhook not listed here is new to the relay.
        create table webhook_relay_backfills (
          webhook_id text primary key,
          done_at timestamptz not null
        );
        -- Wakes every relay when deliveries are queued or re-queued (one notification per
        -- transaction: Postgres folds identical ones), so none waits for a poll.
        create function webhook_deliveries_notify() returns trigger language plpgsql as $$
          begin perform pg_notify('leadline_webhook_deliveries', ''); return null; end
        $$;
        create trigger webhook_deliveries_queued after insert on webhook_deliveries
          for each statement execute function webhook_deliveries_notify();
        create trigger webhook_deliveries_requeued after update of status on webhook_deliveries
          for each row when (new.status = 'pending' and old.status <> 'pending')
          execute function webhook_deliveries_notify();
      `.execute(db);
    },
  },
};
