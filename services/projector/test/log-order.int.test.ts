import { newUuid } from '@leadline/runtime';
import { describe, expect, it } from 'vitest';
import { applyBatch } from '../src/apply-batch';
import { projections } from '../src/projections';
import { newLeadData } from '@leadline/test-kit';
import { accountEventMaker, projectorLog } from './account-log';

const log = projectorLog('leadline-log-order-test');
const accountId = newUuid();
const event = accountEventMaker(accountId);

const lead = (index: number) => ({ lead_id: `lead-${index}`, phone: `+1512555010${index}` });

const created = (index: number) =>
  event('lead.created', newLeadData({ ...lead(index), first_name: `First ${index}`, last_name: 'Last' }));
const collected = (index: number) =>
  event('checklist.item_collected', {
    ...lead(index),
    lead_name: `First ${index} Last`,
    requirement_id: 'req-email',
    requirement_name: 'Email',
    requirement_type: 'email',
    value: `lead${index}@example.com`,
    document: null,
    message_id: null,
    checklist_progress: 1,
    completed_items: 1,
    total_items: 1,
  });
const updated = (index: number) => event('lead.updated', { ...lead(index), changes: { company: 'Renamed' } });
const deleted = (index: number) => event('lead.deleted', lead(index));

async function readModels() {
  const { db } = log.infrastructure;
  return {
    leads: await db
      .selectFrom('leads')
      .select(['id', 'phone', 'name', 'first_name', 'company', 'status'])
      .where('account_id', '=', accountId)
      .orderBy('id')
      .execute(),
    checklist: await db
      .selectFrom('lead_checklist_items')
      .select(['lead_id', 'requirement_id', 'value'])
      .where('account_id', '=', accountId)
      .orderBy('lead_id')
      .execute(),
  };
}

describe('a batch with a lead deleted and the same lead changed', () => {
  it('is applied in log order, and a rebuild from the log reproduces it', async () => {
    const events = [
      event('account.created', {
        name: 'Order Co',
        company_name: 'Order Co',
        slug: 'order-co',
        phone_number: '+15550000001',
        phone_number_provisioned: true,
        forwarding_number: null,
        branding: { logo_url: null, accent_color: null },
        metadata: {},
      }),
      created(1),
      created(2),
      created(3),
      // Lead 1: changed (a checklist item, a field), then deleted.
      collected(1),
      updated(1),
      deleted(1),
      // Lead 2: deleted, then changes that arrive after it.
      deleted(2),
      updated(2),
      // Lead 3 stays: its item and change are kept.
      collected(3),
      updated(3),
    ];
    const { topic, partition, records } = await log.append(accountId, events);

    // The live projector's view: the whole append as one batch.
    await applyBatch(log.infrastructure.db, projections, topic, partition, records(events));
    const live = await readModels();
    expect(live.leads.map((row) => [row.id, row.company])).toEqual([['lead-3', 'Renamed']]);
    expect(live.checklist).toEqual([
      { lead_id: 'lead-3', requirement_id: 'req-email', value: 'lead3@example.com' },
    ]);

    // The rebuild reads the same records from the log, in whatever batches Kafka hands over.
    await log.rebuild();
    expect(await readModels()).toEqual(live);
  });
});
