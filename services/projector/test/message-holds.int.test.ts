import type { EventData } from '@leadline/events';
import { newUuid } from '@leadline/runtime';
import { describe, expect, it } from 'vitest';
import { applyBatch } from '../src/apply-batch';
import { messagingProjection } from '../src/messaging/projection';
import { projections } from '../src/projections';
import { accountEventMaker, projectorLog } from './account-log';

const log = projectorLog('leadline-message-holds-test');
const accountId = newUuid();
const phone = '+15125550142';
const event = accountEventMaker(accountId);

const requested = (id: string) =>
  event('message.outbound_requested', {
    message_id: id,
    phone,
    body: `Step ${id}`,
    source: 'sequence',
    sender_name: null,
  });
const held = (id: string, reason: EventData<'message.held'>['reason'], until: string | null) =>
  event('message.held', { message_id: id, phone, reason, next_attempt_at: until });

const tonight = '2026-01-01T14:00:00.000Z';
const tomorrow = '2026-01-02T06:00:00.000Z';

async function holds() {
  const rows = await log.infrastructure.db
    .selectFrom('messages')
    .select(['id', 'status', 'held_reason', 'held_until'])
    .where('account_id', '=', accountId)
    .orderBy('id')
    .execute();
  return rows.map((row) => ({ ...row, held_until: row.held_until?.toISOString() ?? null }));
}

describe('a held message on the messages read model', () => {
  it('shows the latest hold while it waits, clears it once sent or failed, and a rebuild ends the same', async () => {
    const waiting = [
      event('account.created', {
        name: 'Holds Co',
        company_name: 'Holds Co',
        slug: 'holds-co',
        phone_number: '+15550000003',
        phone_number_provisioned: true,
        forwarding_number: null,
        branding: { logo_url: null, accent_color: null },
        metadata: {},
      }),
      requested('m1'),
      requested('m2'),
      requested('m3'),
      // m1 is held for its campaign, then (the campaign approved) for the lead's quiet hours.
      held('m1', 'registration_pending', null),
      held('m1', 'quiet_hours', tonight),
      held('m2', 'brand_daily_cap', tomorrow),
      held('m3', 'registration_pending', null),
    ];
    const settled = [
      event('message.sent', { message_id: 'm1', phone, provider_message_id: 'SM1', status: 'sent' }),
      event('message.failed', {
        message_id: 'm2',
        phone,
        reason: 'lead_opted_out',
        error_code: null,
        error_message: null,
      }),
    ];
    const { topic, partition, records } = await log.append(accountId, [...waiting, ...settled]);

    await applyBatch(log.infrastructure.db, projections, topic, partition, records(waiting, 0));
    expect(await holds()).toEqual([
      { id: 'm1', status: 'queued', held_reason: 'quiet_hours', held_until: tonight },
      { id: 'm2', status: 'queued', held_reason: 'brand_daily_cap', held_until: tomorrow },
      { id: 'm3', status: 'queued', held_reason: 'registration_pending', held_until: null },
    ]);

    await applyBatch(log.infrastructure.db, projections, topic, partition, records(settled, waiting.length));
    const live = await holds();
    expect(live).toEqual([
      { id: 'm1', status: 'sent', held_reason: null, held_until: null },
      { id: 'm2', status: 'failed', held_reason: null, held_until: null },
      { id: 'm3', status: 'queued', held_reason: 'registration_pending', held_until: null },
    ]);

    // Holds replayed after the messages settled (a redelivery) change nothing.
    await log.infrastructure.db.transaction().execute((trx) =>
      messagingProjection.apply(
        trx,
        waiting.filter((entry) => entry.type === 'message.held'),
      ),
    );
    expect(await holds()).toEqual(live);

    // The rebuild reads the same records from the log, in whatever batches Kafka hands over.
    await log.rebuild();
    expect(await holds()).toEqual(live);
  });
});
