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
};
