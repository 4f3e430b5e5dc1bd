import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import { READ_MODEL_SCHEMA } from '../database';
import { carrierRegistrationOperationalMigrations } from './carrier-registration';
import { smsPacingOperationalMigrations } from './sms-pacing';

/** Tables in `public` that are not derived from the log (see OperationalTables). */
/**
 * Reserves every existing account's number. Where two accounts already share one (possible before
 * reservations existed), the oldest keeps it and each conflict is reported for an operator to sort
 * out, rather than failing the migration and the deploy with it.
 */
export async function reserveExistingPhoneNumbers<DB>(db: Kysely<DB>): Promise<void> {
  const { rows: present } = await sql<{ present: boolean }>`
    select to_regclass(${`${READ_MODEL_SCHEMA}.accounts`}) is not null as present`.execute(db);
  if (!present[0]?.present) return;
  const { rows } = await sql<{ phone_number: string; accounts: string[]; partners: string[] }>`
    select phone_number,
           array_agg(id order by created_at, id) as accounts,
           array_agg(partner_id order by created_at, id) as partners
    from ${sql.table(`${READ_MODEL_SCHEMA}.accounts`)}
    group by phone_number`.execute(db);
  for (const row of rows) {
    await sql`
      insert into public.phone_number_reservations (phone_number, account_id, partner_id)
      values (${row.phone_number}, ${row.accounts[0]}, ${row.partners[0]})
      on conflict do nothing`.execute(db);
    if (row.accounts.length > 1) {
      console.warn(
        `phone number ${row.phone_number} is shared by accounts ${row.accounts.join(', ')}: ` +
          `reserved for ${row.accounts[0]} (the oldest); inbound SMS to it reaches only that account ` +
          'once the others are released or given another number',
      );
    }
  }
}

/**
 * Reserves every existing account's slug for its account. The read model's unique index already kept
 * them unique per partner, so nothing conflicts; `on conflict` only makes a re-run harmless.
 */
export async function reserveExistingSlugs<DB>(db: Kysely<DB>): Promise<void> {
  const { rows: present } = await sql<{ present: boolean }>`
    select to_regclass(${`${READ_MODEL_SCHEMA}.accounts`}) is not null as present`.execute(db);
  if (!present[0]?.present) return;
  await sql`
    insert into public.account_slug_reservations (partner_id, slug, account_id)
    select partner_id, slug, id from ${sql.table(`${READ_MODEL_SCHEMA}.accounts`)}
    on conflict do nothing`.execute(db);
}

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
  '0009_phone_number_reservations': {
    async up(db: Kysely<unknown>) {
      // One number, one account: the primary key is the guarantee. A row is taken in the creating
      // command's transaction (so it is gone again if the append fails) and deleted when the partner
      // releases the number; a deactivated account keeps its row.
      await sql`
        create table phone_number_reservations (
          phone_number text primary key,
          account_id text not null unique,
          partner_id text not null,
          reserved_at timestamptz not null default now()
        );
      `.execute(db);
      await reserveExistingPhoneNumbers(db);
    },
  },
  '0009_partner_key_last_use': {
    async up(db: Kysely<unknown>) {
      await sql`
        alter table partner_api_keys add column last_used_at timestamptz;
        create index partner_api_keys_partner on partner_api_keys (partner_id, created_at);
      `.execute(db);
    },
  },
  '0009_rate_limit_counters': {
    async up(db: Kysely<unknown>) {
      // The command API's per-key request counters, shared by its instances (one row per key).
      await sql`
        create unlogged table rate_limit_counters (
          key text primary key,
          window_started_at timestamptz not null,
          count integer not null
        );
      `.execute(db);
    },
  },
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
  '0010_embed_tokens': {
    async up(db: Kysely<unknown>) {
      // Embed tokens are credentials, so they stay off the log like partner keys: only their hash is
      // kept, with the account, role and user name they are scoped to.
      await sql`
        create table embed_tokens (
          id text primary key,
          token_hash text not null unique,
          partner_id text not null,
          account_id text not null,
          user_name text,
          user_role text not null,
          view text not null,
          parent_origin text,
          created_at timestamptz not null,
          expires_at timestamptz not null,
          revoked_at timestamptz
        );
        create index embed_tokens_live on embed_tokens (account_id) where revoked_at is null;
      `.execute(db);
    },
  },
  '0011_idempotency_keys': {
    async up(db: Kysely<unknown>) {
      // Idempotency-Key: what a partner's first request with a key answered, replayed to its retries.
      // Per partner, not per key id, so a rotated key still finds the answers of the previous one.
      await sql`
        create table idempotency_keys (
          partner_id text not null,
          key text not null,
          request_hash text not null,
          -- The request that holds the key while it runs; null once its answer is stored.
          owner text,
          locked_until timestamptz,
          response_status integer,
          response_headers jsonb,
          response_body bytea,
          created_at timestamptz not null,
          expires_at timestamptz not null,
          primary key (partner_id, key)
        );
        create index idempotency_keys_expiry on idempotency_keys (expires_at);
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
  '0011_account_slug_reservations': {
    async up(db: Kysely<unknown>) {
      // One slug per partner and account: the primary key is the guarantee, so creating an account
      // needs neither a platform-wide lock nor a wait for the whole log to be projected. A row is
      // taken in the creating command's transaction (gone again if the append fails) and kept for
      // good: a slug never changes, and a deactivated account keeps it.
      await sql`
        create table account_slug_reservations (
          partner_id text not null,
          slug text not null,
          account_id text not null unique,
          reserved_at timestamptz not null default now(),
          primary key (partner_id, slug)
        );
      `.execute(db);
      await reserveExistingSlugs(db);
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
  '0015_partner_key_changes': {
    async up(db: Kysely<unknown>) {
      await sql`
        -- The command API caches partner keys; a revoked, changed or deleted key is announced to
        -- every instance at its commit, whoever made it (the API, the partner CLI, an operator's SQL).
        -- The last-use bookkeeping does not announce anything.
        create function notify_partner_key_change() returns trigger language plpgsql as $$
        begin
          perform pg_notify('leadline_partner_key_changes', old.key_hash);
          return null;
        end $$;
        create trigger partner_api_keys_changed
          after update of revoked_at, key_hash, partner_id on partner_api_keys
          for each row
          when (old.revoked_at is distinct from new.revoked_at
                or old.key_hash is distinct from new.key_hash
                or old.partner_id is distinct from new.partner_id)
          execute function notify_partner_key_change();
        create trigger partner_api_keys_deleted
          after delete on partner_api_keys
          for each row execute function notify_partner_key_change();
      `.execute(db);
    },
  },
  '0016_personal_data_keys': {
    async up(db: Kysely<unknown>) {
      await sql`
        create table personal_data_keys (
          key_id text primary key,
          account_id text not null,
          subject text not null,
          wrapped_key text,
          created_at timestamptz not null default now(),
          erased_at timestamptz
        );
        -- One live key per subject; an erased subject that comes back (texts again) gets a new one.
        create unique index personal_data_keys_live_subject
          on personal_data_keys (account_id, subject) where erased_at is null;
      `.execute(db);
    },
  },
  '0017_personal_data_key_periods': {
    async up(db: Kysely<unknown>) {
      await sql`
        -- A subject's content (message bodies, documents) is sealed under a key per UTC day, which the
        -- account's retention destroys once the day is old enough; null is the subject's lasting key.
        alter table personal_data_keys add column period date;
        drop index personal_data_keys_live_subject;
        create unique index personal_data_keys_live_subject_period
          on personal_data_keys (account_id, subject, coalesce(period, '-infinity'::date))
          where erased_at is null;
        -- The retention pass finds an account's live keys of days past its cutoff.
        create index personal_data_keys_live_periods
          on personal_data_keys (account_id, period) where erased_at is null and period is not null;
      `.execute(db);
    },
  },
  ...carrierRegistrationOperationalMigrations,
  ...smsPacingOperationalMigrations,
};
