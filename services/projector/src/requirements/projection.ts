import type { DomainEvent } from '@leadline/events';
import { defineProjection } from '../projection';

/** Each account's checklist definition (requirementList). Deleting one keeps collected values. */
export const requirementsProjection = defineProjection(
  'requirements',
  ['requirement.created', 'requirement.updated', 'requirement.deleted'],
  async (trx, events) => {
    for (const event of events) {
      switch (event.type) {
        case 'requirement.created':
          await trx
            .insertInto('requirements')
            .values({
              id: event.data.requirement_id,
              account_id: event.account_id,
              name: event.data.name,
              type: event.data.type,
              description: event.data.description,
              required: event.data.required,
              created_at: event.occurred_at,
              updated_at: event.occurred_at,
            })
            .onConflict((oc) => oc.column('id').doNothing())
            .execute();
          break;
        case 'requirement.updated':
          await trx
            .updateTable('requirements')
            .set({ ...event.data.changes, updated_at: event.occurred_at })
            .where('id', '=', event.data.requirement_id)
            .execute();
          break;
        case 'requirement.deleted':
          await trx.deleteFrom('requirements').where('id', '=', event.data.requirement_id).execute();
          break;
        default: {
          const unhandled: never = event;
          throw new Error(`Unhandled event ${(unhandled as DomainEvent).type}`);
        }
      }
    }
  },
);
