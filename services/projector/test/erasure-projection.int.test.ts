import type { DomainEvent, EventData, EventType } from '@leadline/events';
import { connectInfrastructure, newUuid, type Infrastructure } from '@leadline/runtime';
import { createTestEnvironment, newLeadData, type TestEnvironment } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyBatch } from '../src/apply-batch';
import { projections } from '../src/projections';

let env: TestEnvironment;
let infrastructure: Infrastructure;

beforeAll(async () => {
  env = await createTestEnvironment();
  infrastructure = await connectInfrastructure(env.config, 'leadline-erasure-projection-test');
});
afterAll(async () => {
  await infrastructure?.close();
  await env?.dispose();
});

function event<T extends EventType>(type: T, accountId: string, data: EventData<T>): DomainEvent {
  return {
    id: newUuid(),
    type,
    version: 1,
    account_id: accountId,
    partner_id: 'partner-under-test',
    occurred_at: '2026-01-01T00:00:00.000Z',
    actor: { kind: 'system', service: 'test' },
    correlation_id: 'test',
    causation_id: null,
    data,
  } as DomainEvent;
}

const leadCreated = (accountId: string, leadId: string, phone: string) =>
  event('lead.created', accountId, newLeadData({ lead_id: leadId, phone, name: 'Someone' }));

describe('the erasure projection', () => {
  it('finds rows kept in clear by the keyed hash when the event reads as erased, and destroys the key when live', async () => {
    const { db } = infrastructure;
    const accountId = newUuid();
    const [leadId, otherId] = [newUuid(), newUuid()];
    const [phone, otherPhone] = ['+15125550841', '+15125550842'];
    await db
      .insertInto('accounts')
      .values({
        id: accountId,
        partner_id: 'partner-under-test',
        name: 'Account',
        company_name: 'Account',
        slug: `account-${accountId}`,
        status: 'active',
        phone_number: '+15550000841',
        forwarding_number: null,
        logo_url: null,
        accent_color: null,
        metadata: '{}',
        created_at: new Date(),
        updated_at: new Date(),
        deactivated_at: null,
        sending_window: null,
      })
      .execute();
    const context = { personalDataKeys: { subjectOf: infrastructure.personalDataKeys.subjectOf } };
    let offset = 0;
    const apply = (...events: DomainEvent[]) =>
      applyBatch(
        db,
        projections,
        'erasure',
        0,
        events.map((event) => ({ offset: String(offset++), event })),
        { live: true, context },
      );
    await apply(leadCreated(accountId, leadId, phone), leadCreated(accountId, otherId, otherPhone));
    // A conversation of each number, kept under the phone in clear as the live projector writes it.
    for (const number of [phone, otherPhone]) {
      await db
        .insertInto('conversations')
        .values({
          account_id: accountId,
          phone: number,
          started_at: new Date(),
          preview: 'hello',
          last_message_at: new Date(),
          ai_paused_until: null,
          opted_out_at: null,
          summary: null,
        })
        .execute();
      await db
        .insertInto('messages')
        .values({
          id: newUuid(),
          account_id: accountId,
          phone: number,
          direction: 'inbound',
          body: 'hello',
          source: null,
          sender_name: null,
          status: 'received',
          provider_message_id: null,
          error_code: null,
          media: '[]',
          sent_at: new Date(),
        })
        .execute();
    }
    await db.updateTable('accounts').set({ total_conversations: 2 }).where('id', '=', accountId).execute();

    // The key was destroyed before the projector read the event: its phone reads as the erased marker.
    const subject = infrastructure.personalDataKeys.subjectOf(accountId, 'lead', phone);
    const erased = event('lead.erased', accountId, { lead_id: null, phone: `erased:${subject}`, subject });
    await apply(erased);
    const phonesIn = async (table: 'leads' | 'conversations' | 'messages') =>
      (await db.selectFrom(table).select('phone').where('account_id', '=', accountId).execute()).map(
        (row) => row.phone,
      );
    expect(await phonesIn('leads')).toEqual([otherPhone]);
    expect(await phonesIn('conversations')).toEqual([otherPhone]);
    expect(await phonesIn('messages')).toEqual([otherPhone]);
    const totals = () =>
      db
        .selectFrom('accounts')
        .select(['total_leads', 'total_conversations'])
        .where('id', '=', accountId)
        .executeTakeFirstOrThrow();
    expect(await totals()).toEqual({ total_leads: 1, total_conversations: 1 });

    // Seen again (a second erasure of the same person): nothing more goes, and the totals hold.
    await apply({ ...erased, id: newUuid() });
    expect(await phonesIn('leads')).toEqual([otherPhone]);
    expect(await totals()).toEqual({ total_leads: 1, total_conversations: 1 });
  });
});
