import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/** The keys that seal each data subject's personal data on the log. */
export const personalDataOperationalMigrations: Record<string, Migration> = {
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
  '0018_erased_lasting_keys': {
    async up(db: Kysely<unknown>) {
      await sql`
        -- A report on earlier work (a delivery report) about an erased person finds the erasure's
        -- record here rather than keying the person again.
        create index personal_data_keys_erased_subjects
          on personal_data_keys (account_id, subject) where erased_at is not null and period is null;
      `.execute(db);
    },
  },
};
