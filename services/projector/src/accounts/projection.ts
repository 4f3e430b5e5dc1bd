import type { DomainEvent } from '@leadline/events';
import type { Database } from '@leadline/runtime';
import { sql, type Transaction } from 'kysely';
import { mergedMetadata } from '../metadata';
import { defineProjection } from '../projection';

type AccountEvent = Exclude<
  Extract<DomainEvent, { type: 'partner.created' | `account.${string}` | 'team_member.invited' }>,
  // The account's content, not the account: see retention.ts.
  { type: 'account.content_expired' }
>;

async function applyOne(trx: Transaction<Database>, event: AccountEvent): Promise<void> {
  switch (event.type) {
    case 'partner.created':
      await trx
        .insertInto('partners')
        .values({ id: event.partner_id, name: event.data.name, created_at: event.occurred_at })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
      return;
    case 'account.created': {
      const { data } = event;
      await trx
        .insertInto('accounts')
        .values({
          id: event.account_id,
          partner_id: event.partner_id,
          name: data.name,
          company_name: data.company_name,
          slug: data.slug,
          status: 'active',
          phone_number: data.phone_number,
          forwarding_number: data.forwarding_number,
          logo_url: data.branding.logo_url,
          accent_color: data.branding.accent_color,
          metadata: JSON.stringify(data.metadata),
          ...(data.ai_pause_minutes !== undefined && { ai_pause_minutes: data.ai_pause_minutes }),
          sending_window: data.sending_window ? JSON.stringify(data.sending_window) : null,
          consent_required: data.consent_required ?? false,
          retention_days: data.retention_days ?? null,
          messages_per_second: data.sending_rate?.messages_per_second ?? null,
          daily_cap: data.sending_rate?.daily_cap ?? null,
          created_at: event.occurred_at,
          updated_at: event.occurred_at,
          deactivated_at: null,
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
      return;
    }
    case 'account.updated': {
      const { branding, metadata, sending_window, sending_rate, ...fields } = event.data;
      await trx
        .updateTable('accounts')
        .set({
          ...fields,
          ...(branding?.logo_url !== undefined && { logo_url: branding.logo_url }),
          ...(branding?.accent_color !== undefined && { accent_color: branding.accent_color }),
          ...(metadata && { metadata: mergedMetadata(metadata) }),
          ...(sending_window && { sending_window: JSON.stringify(sending_window) }),
          ...(sending_rate?.messages_per_second !== undefined && {
            messages_per_second: sending_rate.messages_per_second,
          }),
          ...(sending_rate?.daily_cap !== undefined && { daily_cap: sending_rate.daily_cap }),
          updated_at: event.occurred_at,
        })
        .where('id', '=', event.account_id)
        .execute();
      return;
    }
    case 'account.deactivated':
      await trx
        .updateTable('accounts')
        .set({ status: 'deactivated', deactivated_at: event.occurred_at, updated_at: event.occurred_at })
        .where('id', '=', event.account_id)
        .execute();
      return;
    case 'account.reactivated':
      await trx
        .updateTable('accounts')
        .set({ status: 'active', deactivated_at: null, updated_at: event.occurred_at })
        .where('id', '=', event.account_id)
        .execute();
      return;
    case 'account.phone_number_released':
      await trx
        .updateTable('accounts')
        .set({ phone_number_released_at: event.occurred_at, updated_at: event.occurred_at })
        .where('id', '=', event.account_id)
        .execute();
      return;
    case 'account.erased':
      // The people were erased by the lead.erased events before it; what is left of personal data in
      // the account's own rows is its team (their keys are destroyed with the account's).
      await trx.deleteFrom('team_members').where('account_id', '=', event.account_id).execute();
      await trx
        .updateTable('accounts')
        .set({
          erased_at: sql`coalesce(erased_at, ${event.data.erased_at}::timestamptz)`,
          leads_erased: sql`greatest(leads_erased, ${event.data.leads_erased})`,
          updated_at: event.occurred_at,
        })
        .where('id', '=', event.account_id)
        .execute();
      return;
    case 'team_member.invited': {
      const { data } = event;
      await trx
        .insertInto('team_members')
        .values({
          id: data.member_id,
          account_id: event.account_id,
          email: data.email,
          name: data.name,
          role: data.role,
          phone_number: data.phone_number,
          forwarding_number: data.forwarding_number,
          invited_at: event.occurred_at,
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
      return;
    }
    default: {
      const unhandled: never = event;
      throw new Error(`Unhandled event ${(unhandled as DomainEvent).type}`);
    }
  }
}

/** Partners, accounts (the accountDetails / accountList read model) and team members (gone with an erasure). */
export const accountsProjection = defineProjection(
  'accounts',
  [
    'partner.created',
    'account.created',
    'account.updated',
    'account.deactivated',
    'account.reactivated',
    'account.phone_number_released',
    'account.erased',
    'team_member.invited',
  ],
  async (trx, events) => {
    // Account events are rare and each touches one row; one statement each keeps them readable.
    for (const event of events) await applyOne(trx, event);
  },
);
