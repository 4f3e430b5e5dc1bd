import { sql } from 'kysely';
import { afterAll, beforeAll, expect } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';
import { postInboundSms } from '../../../system-test/inbound-sms';

/** What the erasure tests share: the system, the person to erase and where their values could be kept. */
export let system: TestSystem;
export let acme: PartnerClient;
export let acmeKey: string;

/** The system with one partner (Acme CRM), on this file's own database and topics. */
export function useErasureSystem() {
  beforeAll(async () => {
    system = await startSystem();
    acmeKey = await system.createPartner('Acme CRM');
    acme = partnerClient(system.app, acmeKey);
  });
  afterAll(async () => {
    await system?.close();
  });
}

// The person to erase: every value is unusual enough that finding it anywhere means it was kept.
export const phone = '+15125557319';
export const person = {
  name: 'Zephyrine Quarterbridge',
  email: 'zephyrine.q@example.org',
  notes: 'Prefers calls after six, divorce settlement pending',
  metadata: { loan_reference: 'LOAN-ZQ-77310' },
};
export const manualBody = 'Your refinance quote is ready, Zephyrine';
export const inboundBody = 'I will send my W-2 from the Quarterbridge estate tomorrow';
/** What must be nowhere once the person is erased; the phone in every form a table could keep. */
export const personalValues = [
  phone,
  phone.slice(2),
  person.name,
  person.email,
  person.notes,
  person.metadata.loan_reference,
  manualBody,
  inboundBody,
];

/** Another lead of the account, which the erasure must leave as it is. */
export const otherPhone = '+15125557320';

export async function inboundSms(to: string, from: string, body: string) {
  expect((await postInboundSms(system, { to, from, body })).statusCode).toBe(200);
}

/** Every row of every table of every schema of the test database, as JSON text (the registry keeps its own). */
export async function everyRow(): Promise<{ table: string; row: string }[]> {
  const { rows: tables } = await sql<{ table_schema: string; table_name: string }>`
    select table_schema, table_name from information_schema.tables
    where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')
  `.execute(system.services.db);
  const found: { table: string; row: string }[] = [];
  for (const { table_schema, table_name } of tables) {
    const { rows } = await sql<{ row: string }>`
      select row_to_json(t)::text as row from ${sql.table(`${table_schema}.${table_name}`)} t
    `.execute(system.services.db);
    for (const { row } of rows) found.push({ table: `${table_schema}.${table_name}`, row });
  }
  return found;
}

/**
 * The rows holding any of the person's values, named by table and value: as text, or as the hex that
 * `row_to_json` writes a `bytea` column as (stored answers, document bytes).
 */
export async function rowsWithPersonalValues(values: readonly string[] = personalValues) {
  const rows = await everyRow();
  return rows.flatMap(({ table, row }) =>
    values
      .filter((value) => row.includes(value) || row.includes(Buffer.from(value, 'utf8').toString('hex')))
      .map((value) => `${table}: ${value}`),
  );
}

export const usageOf = (accountId: string) =>
  system.services.db.selectFrom('usage_counters').selectAll().where('account_id', '=', accountId).execute();
