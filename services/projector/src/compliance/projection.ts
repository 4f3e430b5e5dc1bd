import type { DomainEvent } from '@leadline/events';
import { sql } from 'kysely';
import { defineProjection } from '../projection';

/**
 * Each account's carrier registration (registrationStatus): its latest submission, each step's status
 * with the carrier's reason and when it took it, and what was created at the provider. A submission
 * resets the steps; a step change or a resource counts only for the submission it names, so a late
 * event about an earlier submission changes nothing, and applying an event twice changes nothing.
 */
export const complianceProjection = defineProjection(
  'compliance',
  [
    'compliance.registration_submitted',
    'compliance.registration_step_changed',
    'compliance.registration_resource_created',
  ],
  async (trx, events) => {
    for (const event of events) {
      switch (event.type) {
        case 'compliance.registration_submitted': {
          const { data } = event;
          const at = event.occurred_at;
          await trx
            .insertInto('carrier_registrations')
            .values({
              account_id: event.account_id,
              partner_id: event.partner_id,
              submission_id: data.submission_id,
              profile: JSON.stringify(data.profile),
              tax_id_last4: data.tax_id.last4,
              tax_id_ciphertext: data.tax_id.ciphertext,
              submitted_at: at,
              updated_at: at,
              customer_profile_status: 'draft',
              customer_profile_reason: null,
              customer_profile_updated_at: at,
              brand_status: 'draft',
              brand_reason: null,
              brand_updated_at: at,
              campaign_status: 'draft',
              campaign_reason: null,
              campaign_updated_at: at,
              number_status: 'draft',
              number_reason: null,
              number_updated_at: at,
              resources: '{}',
            })
            .onConflict((oc) =>
              oc
                .column('account_id')
                .doUpdateSet((eb) => ({
                  submission_id: eb.ref('excluded.submission_id'),
                  profile: eb.ref('excluded.profile'),
                  tax_id_last4: eb.ref('excluded.tax_id_last4'),
                  tax_id_ciphertext: eb.ref('excluded.tax_id_ciphertext'),
                  submitted_at: eb.ref('excluded.submitted_at'),
                  updated_at: eb.ref('excluded.updated_at'),
                  ...Object.fromEntries(
                    ['customer_profile', 'brand', 'campaign', 'number'].flatMap((step) =>
                      ['status', 'reason', 'updated_at'].map((column) => [
                        `${step}_${column}`,
                        eb.ref(`excluded.${step}_${column}` as never),
                      ]),
                    ),
                  ),
                  resources: eb.ref('excluded.resources'),
                }))
                // The same submission again (a redelivery) keeps what happened to it since.
                .where('carrier_registrations.submission_id', '<>', data.submission_id),
            )
            .execute();
          break;
        }
        case 'compliance.registration_step_changed': {
          const { data } = event;
          await trx
            .updateTable('carrier_registrations')
            .set({
              [`${data.step}_status`]: data.status,
              [`${data.step}_reason`]: data.reason,
              [`${data.step}_updated_at`]: event.occurred_at,
              updated_at: event.occurred_at,
            })
            .where('account_id', '=', event.account_id)
            .where('submission_id', '=', data.submission_id)
            .execute();
          break;
        }
        case 'compliance.registration_resource_created': {
          const { data } = event;
          await trx
            .updateTable('carrier_registrations')
            .set({
              resources: sql`resources || jsonb_build_object(${data.resource}::text, ${data.provider_id}::text)`,
              updated_at: event.occurred_at,
            })
            .where('account_id', '=', event.account_id)
            .where('submission_id', '=', data.submission_id)
            .execute();
          break;
        }
        default: {
          const unhandled: never = event;
          throw new Error(`Unhandled event ${(unhandled as DomainEvent).type}`);
        }
      }
    }
  },
);
