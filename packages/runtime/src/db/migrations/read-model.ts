import { sql, type Kysely, type Migration } from 'kysely';

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
};
