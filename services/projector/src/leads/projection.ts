import { foldLeadChanges, type LeadChanges } from '@leadline/domain';
import { leads, type DomainEvent, type EventOf } from '@leadline/events';
import type { Database } from '@leadline/runtime';
import { sql, type Transaction } from 'kysely';
import { defineProjection } from '../projection';
import { runsByType } from '../runs';
import { addUsage } from '../usage/counters';
import { addToTotals, countById } from '../usage/totals';

type LeadEvent = EventOf<'lead.created' | 'lead.updated' | 'lead.status_changed' | 'lead.deleted'>;

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
  // Each account's `total_leads` follows the rows actually inserted.
  await addToTotals(
    trx,
    { table: 'accounts', column: 'total_leads' },
    countById(freshEvents.map((event) => event.account_id)),
  );
  // Leads that texted in first were not imported; billing counts imports.
  await addUsage(
    trx,
    'leads_imported',
    freshEvents.filter((event) => event.data.origin !== 'inbound_message'),
  );
}

/** The text columns a `lead.updated` may set, from the catalog (everything but `metadata`). */
const textFields = leads.leadFieldsSchema.keyof().options.filter((field) => field !== 'metadata');

/**
 * A run of updates as one statement, however many leads a bulk re-import filled in. A lead changed
 * more than once in the run has its changes folded in log order first (later values win; metadata
 * patches merge, a null still removing its key).
 */
async function updated(trx: Transaction<Database>, events: readonly EventOf<'lead.updated'>[]) {
  const folded = new Map<string, { changes: LeadChanges; at: string }>();
  for (const { data, occurred_at } of events) {
    const previous = folded.get(data.lead_id)?.changes;
    folded.set(data.lead_id, { changes: foldLeadChanges(previous, data.changes), at: occurred_at });
  }
  const rows = [...folded].map(([id, { changes, at }]) => {
    const patch = Object.entries(changes.metadata ?? {});
    return {
      id,
      at,
      c: changes,
      metadata_set: Object.fromEntries(patch.filter(([, value]) => value !== null)),
      metadata_removed: patch.filter(([, value]) => value === null).map(([key]) => key),
    };
  });
  // `c ? 'field'` tells a field set to null (cleared) from a field not changed.
  const setText = textFields.map(
    (field) =>
      sql`${sql.id(field)} = case when u.c ? ${field} then u.c ->> ${field} else leads.${sql.id(field)} end`,
  );
  await sql`
    update leads set
      ${sql.join(setText)},
      auto_sequence = case when u.c ? 'auto_sequence' then (u.c ->> 'auto_sequence')::boolean
        else leads.auto_sequence end,
      metadata = (leads.metadata || u.metadata_set)
        - array(select jsonb_array_elements_text(u.metadata_removed)),
      updated_at = u.at
    from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
      as u(id text, at timestamptz, c jsonb, metadata_set jsonb, metadata_removed jsonb)
    where leads.id = u.id`.execute(trx);
}

async function deleted(trx: Transaction<Database>, events: readonly EventOf<'lead.deleted'>[]) {
  const ids = events.map((event) => event.data.lead_id);
  const removed = await trx.deleteFrom('leads').where('id', 'in', ids).returning('account_id').execute();
  await trx.deleteFrom('lead_checklist_items').where('lead_id', 'in', ids).execute();
  await addToTotals(
    trx,
    { table: 'accounts', column: 'total_leads' },
    countById(
      removed.map((row) => row.account_id),
      -1,
    ),
  );
}

/** A run of status changes as one statement (a sequencer batch contacts many leads at once); the last change of a lead wins. */
async function statusChanged(trx: Transaction<Database>, events: readonly EventOf<'lead.status_changed'>[]) {
  const last = new Map(events.map((event) => [event.data.lead_id, event]));
  const rows = [...last.values()].map((event) => ({
    id: event.data.lead_id,
    status: event.data.new_status,
    at: event.occurred_at,
  }));
  await sql`
    update leads set status = u.status, updated_at = u.at
    from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as u(id text, status text, at timestamptz)
    where leads.id = u.id`.execute(trx);
}

async function applyRun(trx: Transaction<Database>, run: LeadEvent[]) {
  const first = run[0]!;
  switch (first.type) {
    case 'lead.created':
      return created(trx, run as EventOf<'lead.created'>[]);
    case 'lead.updated':
      return updated(trx, run as EventOf<'lead.updated'>[]);
    case 'lead.status_changed':
      return statusChanged(trx, run as EventOf<'lead.status_changed'>[]);
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
