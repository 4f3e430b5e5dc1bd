import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import { READ_MODEL_SCHEMA } from '../database';

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

/**
 * The partner API's own state: its keys and their use, request counters, embed tokens, Idempotency-Key
 * answers, the local provider's numbers, and the reservations that keep a number and a slug to one
 * account.
 */
export const partnerAccessOperationalMigrations: Record<string, Migration> = {
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
};
