import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/**
 * What the SMS gateway needs to hold a message and to pace each number: why a pending row waits and
 * until when, what a compliance reply answers, whether a row is a proactive (sequence) message bound
 * to the lead's sending window, and each sending number's pace.
 */
export const smsPacingOperationalMigrations: Record<string, Migration> = {
  '0015_sms_outbox_holds_and_pacing': {
    async up(db: Kysely<unknown>) {
      await sql`
        -- A held row is pending but not claimable before held_until; it takes no lease, so the
        -- account's other rows (an opt-out confirmation) go past it.
        alter table sms_outbox
          add column held_until timestamptz,
          add column hold_reason text,
          add column answers text,
          add column proactive boolean not null default false;
        -- One row per sending number: the earliest instant its next message may leave (claimed under
        -- the account's claim, so two gateways together never exceed its rate), and what its brand
        -- sent on the carriers' current day.
        create table sms_number_pace (
          phone_number text primary key,
          account_id text not null,
          next_send_at timestamptz not null,
          cap_day text not null,
          sent_on_cap_day integer not null,
          updated_at timestamptz not null
        );
      `.execute(db);
    },
  },
};
