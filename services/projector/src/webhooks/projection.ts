import type { DomainEvent } from '@leadline/events';
import type { Database } from '@leadline/runtime';
import type { Transaction } from 'kysely';
import { defineProjection } from '../projection';

type WebhookEvent = Extract<
  DomainEvent,
  {
    type:
      | 'webhook.created'
      | 'webhook.updated'
      | 'webhook.deleted'
      | 'webhook.disabled'
      | 'webhook.secret_resealed';
  }
>;

async function applyOne(trx: Transaction<Database>, event: WebhookEvent): Promise<void> {
  switch (event.type) {
    case 'webhook.created': {
      const { data } = event;
      await trx
        .insertInto('webhooks')
        .values({
          id: data.webhook_id,
          partner_id: event.partner_id,
          url: data.url,
          events: data.events,
          active: true,
          secret_ciphertext: data.secret_ciphertext,
          disabled_reason: null,
          created_at: event.occurred_at,
          updated_at: event.occurred_at,
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
      return;
    }
    case 'webhook.updated': {
      const { url, events, active } = event.data.changes;
      await trx
        .updateTable('webhooks')
        .set({
          ...(url !== undefined && { url }),
          ...(events !== undefined && { events }),
          // Re-activating clears why it was switched off.
          ...(active !== undefined && { active, ...(active && { disabled_reason: null }) }),
          updated_at: event.occurred_at,
        })
        .where('id', '=', event.data.webhook_id)
        .where('partner_id', '=', event.partner_id)
        .execute();
      return;
    }
    case 'webhook.deleted':
      await trx
        .deleteFrom('webhooks')
        .where('id', '=', event.data.webhook_id)
        .where('partner_id', '=', event.partner_id)
        .execute();
      return;
    case 'webhook.disabled':
      await trx
        .updateTable('webhooks')
        .set({ active: false, disabled_reason: event.data.reason, updated_at: event.occurred_at })
        .where('id', '=', event.data.webhook_id)
        .where('partner_id', '=', event.partner_id)
        .execute();
      return;
    case 'webhook.secret_resealed':
      await trx
        .updateTable('webhooks')
        .set({ secret_ciphertext: event.data.secret_ciphertext, updated_at: event.occurred_at })
        .where('id', '=', event.data.webhook_id)
        .where('partner_id', '=', event.partner_id)
        .execute();
      return;
    default: {
      const unhandled: never = event;
      throw new Error(`Unhandled event ${(unhandled as DomainEvent).type}`);
    }
  }
}

/** A partner's webhooks (the webhookList read model), read by the API and by the relay's fan-out. */
export const webhooksProjection = defineProjection(
  'webhooks',
  ['webhook.created', 'webhook.updated', 'webhook.deleted', 'webhook.disabled', 'webhook.secret_resealed'],
  async (trx, events) => {
    // Configuration changes are rare and touch one row each.
    for (const event of events) await applyOne(trx, event);
  },
);
