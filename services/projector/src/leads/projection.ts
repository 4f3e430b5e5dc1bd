import type { DomainEvent, EventOf } from '@leadline/events';
import type { Database } from '@leadline/runtime';
import { sql, type Transaction } from 'kysely';
import { mergedMetadata } from '../metadata';
import { defineProjection } from '../projection';
import { runsByType } from '../runs';
import { addUsage } from '../usage/counters';

type LeadEvent = EventOf<'lead.created' | 'lead.updated' | 'lead.status_changed' | 'lead.deleted'>;

/** Keeps each account's `total_leads` in step with the rows actually inserted or deleted. */
async function adjustLeadTotals(trx: Transaction<Database>, accountIds: readonly string[], sign: 1 | -1) {
  const byAccount = new Map<string, number>();
  for (const id of accountIds) byAccount.set(id, (byAccount.get(id) ?? 0) + sign);
  for (const [accountId, delta] of byAccount) {
    await trx
      .updateTable('accounts')
      .set({ total_leads: sql`total_leads + ${delta}` })
      .where('id', '=', accountId)
      .execute();
  }
}

async function created(trx: Transaction<Database>, events: readonly EventOf<'lead.created'>[]) {
  // Returning only the rows inserted now keeps totals and usage exact if a create is seen twice.
  const inserted = await trx
    .insertInto('leads')
    .values(
      events.map(({ account_id, occurred_at, data }) => ({
        id: data.lead_id,
        account_id,
        phone: data.phone,
        name: data.name,
        first_name: data.first_name,
        last_name: data.last_name,
        email: data.email,
        company: data.company,
        notes: data.notes,
        source: data.source,
        external_id: data.external_id,
        property_address: data.property_address,
        auto_sequence: data.auto_sequence,
        metadata: JSON.stringify(data.metadata),
        status: data.status,
        origin: data.origin,
        created_at: occurred_at,
        updated_at: occurred_at,
      })),
    )
    // Any conflict, not only on the id: replaying a create whose lead was deleted since must not
    // collide with a newer lead of the same phone.
    .onConflict((oc) => oc.doNothing())
    .returning('id')
    .execute();
  const fresh = new Set(inserted.map((row) => row.id));
  const freshEvents = events.filter((event) => fresh.has(event.data.lead_id));
  await adjustLeadTotals(
    trx,
    freshEvents.map((event) => event.account_id),
    1,
  );
  // Leads that texted in first were not imported; billing counts imports.
  await addUsage(
    trx,
    'leads_imported',
    freshEvents.filter((event) => event.data.origin !== 'inbound_message'),
  );
}

async function updated(trx: Transaction<Database>, event: EventOf<'lead.updated'>) {
  const { metadata, ...fields } = event.data.changes;
  await trx
    .updateTable('leads')
    .set({
      ...fields,
      ...(metadata && { metadata: mergedMetadata(metadata) }),
      updated_at: event.occurred_at,
    })
    .where('id', '=', event.data.lead_id)
    .execute();
}

async function deleted(trx: Transaction<Database>, events: readonly EventOf<'lead.deleted'>[]) {
  const ids = events.map((event) => event.data.lead_id);
  const removed = await trx.deleteFrom('leads').where('id', 'in', ids).returning('account_id').execute();
  await trx.deleteFrom('lead_checklist_items').where('lead_id', 'in', ids).execute();
  await adjustLeadTotals(
    trx,
    removed.map((row) => row.account_id),
    -1,
  );
}

async function applyRun(trx: Transaction<Database>, run: LeadEvent[]) {
  const first = run[0]!;
  switch (first.type) {
    case 'lead.created':
      return created(trx, run as EventOf<'lead.created'>[]);
    case 'lead.updated':
      for (const event of run as EventOf<'lead.updated'>[]) await updated(trx, event);
      return;
    case 'lead.status_changed':
      for (const event of run as EventOf<'lead.status_changed'>[]) {
        await trx
          .updateTable('leads')
          .set({ status: event.data.new_status, updated_at: event.occurred_at })
          .where('id', '=', event.data.lead_id)
          .execute();
      }
      return;
    case 'lead.deleted':
      return deleted(trx, run as EventOf<'lead.deleted'>[]);
    default: {
      const unhandled: never = first;
      throw new Error(`Unhandled event ${(unhandled as DomainEvent).type}`);
    }
  }
}

/** Leads (leadDetails / leadList), with the accounts' lead totals and the leads_imported counter. */
export const leadsProjection = defineProjection(
  'leads',
  ['lead.created', 'lead.updated', 'lead.status_changed', 'lead.deleted'],
  async (trx, events) => {
    for (const run of runsByType(events)) await applyRun(trx, run);
  },
);
