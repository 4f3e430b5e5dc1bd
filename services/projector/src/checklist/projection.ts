import type { DomainEvent } from '@leadline/events';
import { sql } from 'kysely';
import { isErased } from '@leadline/runtime';
import { defineProjection } from '../projection';
import { addUsage } from '../usage/counters';

/**
 * What was collected for each lead (leadChecklist). A later value for the same item replaces the
 * earlier one. `documents_collected` counts a document once: a row that the event does not change
 * (the same record applied again) is not counted again.
 */
export const checklistProjection = defineProjection(
  'checklist',
  ['checklist.item_collected', 'checklist.completed'],
  async (trx, events) => {
    for (const event of events) {
      switch (event.type) {
        case 'checklist.item_collected': {
          const { data } = event;
          const changed = await trx
            .insertInto('lead_checklist_items')
            .values({
              lead_id: data.lead_id,
              requirement_id: data.requirement_id,
              account_id: event.account_id,
              // Expired by the account's retention (its day's key destroyed): collected, without value.
              value: isErased(data.value) ? null : data.value,
              file_url: null,
              document_id: data.document?.document_id ?? null,
              content_type: data.document?.content_type ?? null,
              collected_at: event.occurred_at,
            })
            .onConflict((oc) =>
              oc
                .columns(['lead_id', 'requirement_id'])
                .doUpdateSet({
                  value: sql`excluded.value`,
                  document_id: sql`excluded.document_id`,
                  content_type: sql`excluded.content_type`,
                  collected_at: sql`excluded.collected_at`,
                })
                .where((eb) =>
                  eb.or([
                    eb(sql`lead_checklist_items.value`, 'is distinct from', sql`excluded.value`),
                    eb(sql`lead_checklist_items.document_id`, 'is distinct from', sql`excluded.document_id`),
                  ]),
                ),
            )
            .returning('lead_id')
            .execute();
          if (changed.length > 0 && data.document) await addUsage(trx, 'documents_collected', [event]);
          break;
        }
        case 'checklist.completed':
          // The state is derived from the collected items; the event is for the partner's webhook.
          break;
        default: {
          const unhandled: never = event;
          throw new Error(`Unhandled event ${(unhandled as DomainEvent).type}`);
        }
      }
    }
  },
);
