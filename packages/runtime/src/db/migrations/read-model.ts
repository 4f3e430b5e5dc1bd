import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import { consentMigrations } from './consent';
import { carrierRegistrationReadModelMigrations } from './carrier-registration';

/**
 * Read-model tables. They are created in whichever schema the connection's search_path names first,
 * so the same migrations build the live `read_model` schema and a fresh one during `rebuild`.
 * Each migration is named `NNNN_topic`; later features append theirs.
 */
export const readModelMigrations: Record<string, Migration> = {
  '0001_checkpoints_partners_accounts': {
    async up(db: Kysely<unknown>) {
      await sql`
        create table projection_checkpoints (
          topic text not null,
          partition integer not null,
          next_offset bigint not null,
          updated_at timestamptz not null,
          primary key (topic, partition)
        );
        create table partners (
          id text primary key,
          name text not null,
          created_at timestamptz not null
        );
        create table accounts (
          id text primary key,
          partner_id text not null,
          name text not null,
          company_name text not null,
          slug text not null,
          status text not null,
          phone_number text not null,
          forwarding_number text,
          logo_url text,
          accent_color text,
          metadata jsonb not null,
          created_at timestamptz not null,
          updated_at timestamptz not null,
          deactivated_at timestamptz,
          total_leads integer not null default 0,
          total_conversations integer not null default 0,
          active_sequences integer not null default 0
        );
        create unique index accounts_partner_slug on accounts (partner_id, slug);
        create index accounts_partner_created on accounts (partner_id, created_at desc, id desc);
        create index accounts_phone_number on accounts (phone_number);
        create table team_members (
          id text primary key,
          account_id text not null,
          email text not null,
          name text,
          role text not null,
          phone_number text,
          forwarding_number text,
          invited_at timestamptz not null
        );
        create unique index team_members_account_email on team_members (account_id, lower(email));
      `.execute(db);
    },
  },
  '0002_leads_requirements_usage': {
    async up(db: Kysely<unknown>) {
      await sql`
        create table leads (
          id text primary key,
          account_id text not null,
          phone text not null,
          name text,
          first_name text,
          last_name text,
          email text,
          company text,
          notes text,
          source text,
          external_id text,
          property_address text,
          auto_sequence boolean not null,
          metadata jsonb not null,
          status text not null,
          origin text not null,
          created_at timestamptz not null,
          updated_at timestamptz not null,
          last_message_at timestamptz
        );
        create unique index leads_account_phone on leads (account_id, phone);
        create unique index leads_account_external_id on leads (account_id, external_id)
          where external_id is not null;
        create index leads_account_created on leads (account_id, created_at desc, id desc);
        create table requirements (
          id text primary key,
          account_id text not null,
          name text not null,
          type text not null,
          description text,
          required boolean not null,
          created_at timestamptz not null,
          updated_at timestamptz not null
        );
        create index requirements_account on requirements (account_id, created_at, id);
        -- Values collected for a lead. Kept when a requirement is deleted; removed with the lead.
        create table lead_checklist_items (
          lead_id text not null,
          requirement_id text not null,
          account_id text not null,
          value text,
          file_url text,
          collected_at timestamptz not null,
          primary key (lead_id, requirement_id)
        );
        create table usage_counters (
          account_id text not null,
          period text not null,
          partner_id text not null,
          conversations integer not null default 0,
          messages_sent integer not null default 0,
          messages_received integer not null default 0,
          leads_imported integer not null default 0,
          documents_collected integer not null default 0,
          sequences_completed integer not null default 0,
          primary key (account_id, period)
        );
        create index usage_counters_partner_period on usage_counters (partner_id, period);
      `.execute(db);
    },
  },
  '0002_webhooks': {
    async up(db: Kysely<unknown>) {
      // One row per live webhook of a partner; deleting a webhook deletes its row.
      await sql`
        create table webhooks (
          id text primary key,
          partner_id text not null,
          url text not null,
          events text[] not null,
          active boolean not null,
          secret_ciphertext text not null,
          disabled_reason text,
          created_at timestamptz not null,
          updated_at timestamptz not null
        );
        create index webhooks_partner_created on webhooks (partner_id, created_at, id);
      `.execute(db);
    },
  },
  '0003_messaging': {
    async up(db: Kysely<unknown>) {
      await sql`
        alter table accounts add column ai_pause_minutes integer not null default 1440;
        -- A lead's last message lives on its conversation, which outlives the lead.
        alter table leads drop column last_message_at;
        -- Keyed by (account, phone): kept when the lead is deleted, found again when it is re-imported.
        create table conversations (
          account_id text not null,
          phone text not null,
          started_at timestamptz,
          preview text,
          last_message_at timestamptz,
          message_count integer not null default 0,
          needs_handoff boolean not null default false,
          ai_paused_until timestamptz,
          opted_out boolean not null default false,
          opted_out_at timestamptz,
          primary key (account_id, phone)
        );
        create index conversations_account_recent
          on conversations (account_id, last_message_at desc nulls last, phone);
        create table messages (
          id text primary key,
          account_id text not null,
          phone text not null,
          direction text not null,
          body text not null,
          source text,
          sender_name text,
          status text not null,
          sent boolean not null default false,
          provider_message_id text unique,
          error_code text,
          media jsonb not null default '[]',
          sent_at timestamptz not null
        );
        create index messages_conversation on messages (account_id, phone, sent_at desc, id desc);
      `.execute(db);
    },
  },
  '0009_account_number_release': {
    async up(db: Kysely<unknown>) {
      // A released number stays on the account as history, but no longer selects it for inbound SMS.
      await sql`alter table accounts add column phone_number_released_at timestamptz`.execute(db);
    },
  },
  '0004_parked_records': {
    async up(db: Kysely<unknown>) {
      // Records the projector could not apply, and the later records of the same stream held behind
      // them (see log-consumer.ts). In the read models' schema, beside the checkpoints, so a rebuild
      // parks afresh in its own schema and the swap carries them over with the read models.
      await sql`
        create table projection_parked_records (
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
        create index projection_parked_records_pending on projection_parked_records (stream_key)
          where status in ('parked', 'held');
      `.execute(db);
    },
  },
  '0007_sequences': {
    async up(db: Kysely<unknown>) {
      await sql`
        -- The account's sending window (quiet hours); null means the default (08:00-21:00, New York).
        alter table accounts add column sending_window jsonb;
        create table sequences (
          id text primary key,
          account_id text not null,
          name text not null,
          description text,
          is_active boolean not null,
          is_default boolean not null,
          steps jsonb not null,
          steps_version integer not null,
          enrolled_count integer not null default 0,
          completed_count integer not null default 0,
          created_at timestamptz not null,
          updated_at timestamptz not null
        );
        create index sequences_account_created on sequences (account_id, created_at, id);
        -- Every version of every sequence's steps: an enrollment keeps the version it started with.
        create table sequence_step_versions (
          sequence_id text not null,
          version integer not null,
          steps jsonb not null,
          primary key (sequence_id, version)
        );
        -- A lead's enrollment in a sequence (active, completed, cancelled, opted_out, or removed with
        -- its lead); reactivation replaces the row with a new enrollment id.
        create table sequence_enrollments (
          id text primary key,
          account_id text not null,
          sequence_id text not null,
          sequence_name text not null,
          lead_id text not null,
          phone text not null,
          status text not null,
          steps_version integer not null,
          total_steps integer not null,
          current_step integer not null,
          next_step_at timestamptz,
          awaiting_ai boolean not null default false,
          replied boolean not null default false,
          started_at timestamptz not null,
          ended_at timestamptz,
          updated_at timestamptz not null
        );
        create unique index sequence_enrollments_sequence_lead on sequence_enrollments (sequence_id, lead_id);
        create index sequence_enrollments_account_phone on sequence_enrollments (account_id, phone);
        create index sequence_enrollments_due on sequence_enrollments (next_step_at)
          where status = 'active' and not awaiting_ai;
      `.execute(db);
    },
  },
  '0008_ai_agent': {
    async up(db: Kysely<unknown>) {
      await sql`
        -- A collected document is referenced by id; its signed file_url is made when it is read.
        alter table lead_checklist_items add column document_id text;
        alter table lead_checklist_items add column content_type text;
        alter table conversations add column summary text;
        -- Turns the AI has handled: inbound bursts by message id, sequence steps by enrollment step.
        create table ai_handled_turns (
          account_id text not null,
          turn_key text not null,
          outcome text not null,
          handled_at timestamptz not null,
          primary key (account_id, turn_key)
        );
        create table ai_prompt_settings (
          account_id text primary key,
          mode text not null,
          role_persona text,
          tone_voice text,
          response_style text,
          conversation_rules text,
          special_instructions text,
          system_prompt text,
          updated_at timestamptz not null
        );
        create table context_files (
          id text primary key,
          account_id text not null,
          name text not null,
          file_type text not null,
          file_size integer not null,
          content text not null,
          created_at timestamptz not null
        );
        create index context_files_account on context_files (account_id, created_at, id);
        create table context_urls (
          id text primary key,
          account_id text not null,
          url text not null,
          title text,
          content text,
          content_hash text,
          etag text,
          last_modified text,
          last_scraped_at timestamptz,
          last_attempt_at timestamptz,
          last_error text,
          created_at timestamptz not null
        );
        create index context_urls_account on context_urls (account_id, created_at, id);
      `.execute(db);
    },
  },
  '0018_retention': {
    async up(db: Kysely<unknown>) {
      await sql`
        alter table accounts add column retention_days integer;
        alter table messages add column content_expired boolean not null default false;
        alter table conversations add column summary_at timestamptz;
      `.execute(db);
    },
  },
  ...consentMigrations,
  ...carrierRegistrationReadModelMigrations,
  '0017_account_erasure': {
    async up(db: Kysely<unknown>) {
      // An erased account's record of it: the first erasure's time (a repeated request answers it) and
      // how many people its erasures erased so far.
      await sql`
        alter table accounts add column erased_at timestamptz;
        alter table accounts add column leads_erased integer not null default 0;
      `.execute(db);
    },
  },
  '0019_message_holds': {
    async up(db: Kysely<unknown>) {
      // Why a queued outbound message waits (`message.held`) and when the gateway decides again; both
      // cleared once it is sent or fails, so a partner sees a reason only while the message waits.
      await sql`
        alter table messages add column held_reason text;
        alter table messages add column held_until timestamptz;
      `.execute(db);
    },
  },
  '0020_account_sending_rate': {
    async up(db: Kysely<unknown>) {
      // The account's own throughput and brand cap; null: the gateway's deployment default.
      await sql`
        alter table accounts add column messages_per_second double precision;
        alter table accounts add column daily_cap integer;
      `.execute(db);
    },
  },
  '0021_opt_out_suppressions': {
    async up(db: Kysely<unknown>) {
      // An opt-out that outlived the erasure of the person who sent it: the law requires honouring it
      // for good, and keeping the minimum needed to do so is allowed (GDPR art. 17(3)(b)). The number
      // is named by its keyed hash (the subject), never in clear; suppressed_at is the opt-out's time.
      await sql`
        create table opt_out_suppressions (
          account_id text not null,
          subject text not null,
          suppressed_at timestamptz not null,
          primary key (account_id, subject)
        );
      `.execute(db);
    },
  },
};
