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
};
