import { afterAll, beforeAll } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

/** What the leads tests share: the system, a partner's new account, and checklist items collected for a lead. */
export let system: TestSystem;
export let acme: PartnerClient;
export let other: PartnerClient;

/** The system, with two partners (Acme CRM and Other CRM), on this file's own database and topics. */
export function useLeadsSystem() {
  beforeAll(async () => {
    system = await startSystem();
    acme = partnerClient(system.app, await system.createPartner('Acme CRM'));
    other = partnerClient(system.app, await system.createPartner('Other CRM'));
  });
  afterAll(() => system?.close());
}

export async function newAccount(client = acme, name = 'Lead Co') {
  const { body } = await client.post('/accounts', { name });
  return body.id as string;
}

/** Marks requirements as collected for a lead, as the AI agent's events will once they exist. */
export async function collect(accountId: string, phone: string, requirementIds: string[]) {
  const lead = await system.services.db
    .selectFrom('leads')
    .select('id')
    .where('account_id', '=', accountId)
    .where('phone', '=', phone)
    .executeTakeFirstOrThrow();
  await system.services.db
    .insertInto('lead_checklist_items')
    .values(
      requirementIds.map((requirement_id) => ({
        lead_id: lead.id,
        requirement_id,
        account_id: accountId,
        value: 'ana@example.com',
        file_url: null,
        collected_at: new Date('2026-03-01T12:00:00Z'),
      })),
    )
    .execute();
}
