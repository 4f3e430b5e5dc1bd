import { newUuid } from '@leadline/runtime';
import { describe, expect, it } from 'vitest';
import { applyBatch } from '../src/apply-batch';
import { projections } from '../src/projections';
import { newLeadData } from '@leadline/test-kit';
import { accountEventMaker, projectorLog } from './account-log';

const log = projectorLog('leadline-large-batch-test');
const accountId = newUuid();
const event = accountEventMaker(accountId);

// More creates than one statement can bind at 18 parameters a lead (65,535 at most).
const LEADS = 5_000;

const created = (index: number) =>
  event(
    'lead.created',
    newLeadData({
      lead_id: `lead-${index}`,
      phone: `+1512${String(7_000_000 + index)}`,
      first_name: `First ${index}`,
    }),
  );

describe('a batch of more creates than one statement binds', () => {
  it('is applied whole, as a projector catching up on bulk imports fetches it', async () => {
    const events = [
      event('account.created', {
        name: 'Catch-up Co',
        company_name: 'Catch-up Co',
        slug: 'catch-up-co',
        phone_number: '+15550000002',
        phone_number_provisioned: true,
        forwarding_number: null,
        branding: { logo_url: null, accent_color: null },
        metadata: {},
      }),
      ...Array.from({ length: LEADS }, (_, index) => created(index)),
    ];
    const { topic, partition, records } = await log.append(accountId, events);

    await applyBatch(log.infrastructure.db, projections, topic, partition, records(events));

    const { db } = log.infrastructure;
    const leads = await db
      .selectFrom('leads')
      .select((eb) => eb.fn.countAll<string>().as('count'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    expect(Number(leads.count)).toBe(LEADS);
    const account = await db
      .selectFrom('accounts')
      .select('total_leads')
      .where('id', '=', accountId)
      .executeTakeFirstOrThrow();
    expect(account.total_leads).toBe(LEADS);
  });
});
