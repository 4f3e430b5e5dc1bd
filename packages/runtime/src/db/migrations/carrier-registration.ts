import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';

/**
 * The account's carrier registration, as the projector builds it from the log: one row per account
 * (its latest submission), each step's status in a column of its own, so the send path reads an
 * account's campaign status with one primary-key lookup.
 */
export const carrierRegistrationReadModelMigrations: Record<string, Migration> = {
  '0014_carrier_registrations': {
    async up(db: Kysely<unknown>) {
      await sql`
        create table carrier_registrations (
          account_id text primary key,
          partner_id text not null,
          submission_id text not null,
          -- The business profile as submitted, the tax id aside (sealed below, never in clear).
          profile jsonb not null,
          tax_id_last4 text not null,
          tax_id_ciphertext text not null,
          submitted_at timestamptz not null,
          updated_at timestamptz not null,
          customer_profile_status text not null,
          customer_profile_reason text,
          customer_profile_updated_at timestamptz not null,
          brand_status text not null,
          brand_reason text,
          brand_updated_at timestamptz not null,
          campaign_status text not null,
          campaign_reason text,
          campaign_updated_at timestamptz not null,
          number_status text not null,
          number_reason text,
          number_updated_at timestamptz not null,
          -- What was created at the provider for this submission: resource name to provider id.
          resources jsonb not null default '{}'
        );
      `.execute(db);
    },
  },
};

/**
 * The registration worker's queue (an account's registration is due when its next action is), and
 * the local provider's own record of what it was asked to register (as Twilio keeps its own).
 */
export const carrierRegistrationOperationalMigrations: Record<string, Migration> = {
  '0014_carrier_registration_work': {
    async up(db: Kysely<unknown>) {
      await sql`
        create table carrier_registration_work (
          account_id text primary key,
          partner_id text not null,
          submission_id text not null,
          due_at timestamptz not null,
          lease_until timestamptz,
          -- Calls in a row that failed for a passing reason (an outage): the backoff grows with them.
          failures integer not null default 0,
          last_error text,
          updated_at timestamptz not null
        );
        create index carrier_registration_work_due on carrier_registration_work (due_at);
        create table local_carrier_registrations (
          id text primary key,
          resource text not null,
          decided_at timestamptz not null,
          outcome text not null,
          reason text,
          created_at timestamptz not null
        );
      `.execute(db);
    },
  },
};
