import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** Read models of proof of consent (see `readModelMigrations`, which these join). */
export const consentMigrations: Record<string, Migration> = {
  '0010_consent_records': {
    async up(db: Kysely<unknown>) {
      await sql`
        -- Accounts created before consent was recorded keep sending as they did.
        alter table accounts add column consent_required boolean not null default false;
        alter table sequence_enrollments add column hold_reason text;
        -- Steps held for consent are not due until a grant lifts the hold: they stay out of the index
        -- the sequencer claims through, however many wait.
        drop index sequence_enrollments_due;
        create index sequence_enrollments_due on sequence_enrollments (next_step_at)
          where status = 'active' and not awaiting_ai and hold_reason is distinct from 'no_consent';
        create table consent_records (
          id text primary key,
          account_id text not null,
          phone text not null,
          lead_id text,
          action text not null,
          method text not null,
          captured_at timestamptz not null,
          recorded_at timestamptz not null,
          recorded_via text not null,
          recorded_by text not null,
          source_url text,
          ip_address text,
          disclosure_text text,
          evidence_url text,
          keyword text,
          message_id text
        );
        -- A number's trail and its status (the record captured last).
        create index consent_records_phone
          on consent_records (account_id, phone, captured_at desc, recorded_at desc, id desc);
        -- The export walks an account's records in the order they were recorded (keyset).
        create index consent_records_recorded on consent_records (account_id, recorded_at, id);
      `.execute(db);
    },
  },
};
