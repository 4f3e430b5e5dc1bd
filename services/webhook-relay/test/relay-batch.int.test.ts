import type { DomainEvent } from '@leadline/events';
import { connectInfrastructure, newUuid, type Infrastructure } from '@leadline/runtime';
import { createTestEnvironment, fakeClock, type TestEnvironment } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveryIdOf } from '../src/fan-out';
import { relayBatch, type PositionedEvent } from '../src/relay';
import { leadCreated, statusChanged } from '../../../system-test/relay';

let env: TestEnvironment;
let infrastructure: Infrastructure;
const clock = fakeClock(new Date('2030-01-07T09:00:00.000Z'));
const partnerId = 'partner-under-test';
const accountId = 'account-under-test';

beforeAll(async () => {
  env = await createTestEnvironment();
  infrastructure = await connectInfrastructure(env.config, 'leadline-relay-batch-test');
  // The read model as the projector leaves it after a webhook.created (setup only).
  await infrastructure.db
    .insertInto('webhooks')
    .values({
      id: 'webhook-1',
      partner_id: partnerId,
      url: 'https://hooks.example.com/in',
      events: ['lead.created', 'lead.status_changed'],
      active: true,
      secret_ciphertext: 'v1.a.b.c',
      disabled_reason: null,
      created_at: new Date('2026-01-01T00:00:00.000Z'),
      updated_at: new Date('2026-01-01T00:00:00.000Z'),
    })
    .execute();
});
afterAll(async () => {
  await infrastructure?.close();
  await env?.dispose();
});

let offset = 0;
function record(
  event: { type: DomainEvent['type']; data: unknown },
  occurredAt = '2026-02-01T00:00:00.000Z',
  account = accountId,
): PositionedEvent {
  return {
    offset: String(offset++),
    event: {
      id: newUuid(),
      version: 1,
      account_id: account,
      partner_id: partnerId,
      occurred_at: occurredAt,
      actor: { kind: 'system', service: 'test' },
      correlation_id: 'test',
      causation_id: null,
      ...event,
    } as DomainEvent,
  };
}

const deliveries = () =>
  infrastructure.db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .orderBy('created_at')
    .orderBy('event_type')
    .execute();
const deps = () => ({
  db: infrastructure.db,
  clock,
  newId: newUuid,
  personalDataKeys: infrastructure.personalDataKeys,
});

/** The delivery went out once and the receiver answered 200 with `answer` (which may echo the payload). */
async function markDelivered(deliveryId: string, answer: string) {
  await infrastructure.db
    .updateTable('webhook_deliveries')
    .set({ status: 'succeeded', attempts: 1, completed_at: clock.now(), last_status_code: 200 })
    .where('id', '=', deliveryId)
    .execute();
  await infrastructure.db
    .insertInto('webhook_delivery_attempts')
    .values({
      delivery_id: deliveryId,
      attempt: 1,
      attempted_at: clock.now(),
      status_code: 200,
      error: null,
      duration_ms: 12,
      response_excerpt: answer,
    })
    .execute();
}

describe('relaying a batch', () => {
  it('queues each event once, even when the batch is delivered again', async () => {
    const batch = [
      record(leadCreated('+15125550301', { first_name: 'Cy', last_name: 'Oak' })),
      record(statusChanged('+15125550301', 'new', 'contacted')),
      record({
        type: 'lead.updated',
        data: { lead_id: 'l', phone: '+15125550301', changes: { name: 'Cyrus Oak' } },
      }),
      record(statusChanged('+15125550301', 'contacted', 'qualified')),
    ];
    expect(await relayBatch(deps(), 'topic', 0, batch)).toBe(3);
    const once = await deliveries();
    expect(await relayBatch(deps(), 'topic', 0, batch)).toBe(0);
    expect(await deliveries()).toEqual(once);
    // A relay that lost its checkpoint (a crash before it committed, a restore) fans the batch out
    // again: the same delivery ids, derived from the event and the webhook, so nothing is queued twice.
    await infrastructure.db.deleteFrom('webhook_relay_checkpoints').execute();
    expect(await relayBatch(deps(), 'topic', 0, batch)).toBe(0);
    expect(await deliveries()).toEqual(once);
    for (const row of once) expect(row.id).toBe(deliveryIdOf(row.event_id, row.webhook_id));
    // The names follow the log inside the batch: before and after the rename.
    const names = once
      .filter((row) => row.event_type === 'lead.status_changed')
      .map((row) => JSON.parse(row.body).data)
      .sort((a, b) => a.new_status.localeCompare(b.new_status));
    expect(names.map((data) => [data.new_status, data.lead_name])).toEqual([
      ['contacted', 'Cy Oak'],
      ['qualified', 'Cyrus Oak'],
    ]);
  });

  it('forgets a deleted lead and sends history to no webhook created after it', async () => {
    const before = (await deliveries()).length;
    const batch = [
      record({ type: 'lead.deleted', data: { lead_id: 'l', phone: '+15125550301' } }),
      record(statusChanged('+15125550301', 'qualified', 'lost')),
      record(leadCreated('+15125550302'), '2025-12-31T23:59:59.999Z'),
    ];
    expect(await relayBatch(deps(), 'topic', 0, batch)).toBe(1);
    const [latest] = (await deliveries()).slice(before);
    expect(JSON.parse(latest!.body).data).toMatchObject({ new_status: 'lost', lead_name: null });
  });

  it("parks a record it cannot apply, holds that account's later records behind it, and relays the other accounts'", async () => {
    const other = 'account-next-door';
    // Another topic: its records start at offset 0 (a batch past the checkpoint is refused).
    offset = 0;
    const poisoned = {
      ...record(leadCreated('+15125550501')),
      key: accountId,
      failure: 'Error: cannot be applied',
    };
    const behind = { ...record(leadCreated('+15125550502')), key: accountId };
    const neighbour = record(leadCreated('+15125550503'));
    const fine = {
      ...neighbour,
      key: other,
      event: { ...neighbour.event!, account_id: other } as DomainEvent,
    };
    await relayBatch(deps(), 'parking-topic', 0, [poisoned, behind, fine]);

    const ids = [poisoned, behind, fine].map((entry) => entry.event!.id);
    const queued = (await deliveries()).filter((delivery) => ids.includes(delivery.event_id));
    expect(queued.map((delivery) => delivery.account_id)).toEqual([other]);
    const parked = await infrastructure.db
      .selectFrom('parked_records')
      .select(['consumer', 'offset', 'stream_key', 'status', 'error'])
      .where('topic', '=', 'parking-topic')
      .orderBy('offset')
      .execute();
    expect(parked).toEqual([
      {
        consumer: 'webhook_relay',
        offset: poisoned.offset,
        stream_key: accountId,
        status: 'parked',
        error: 'Error: cannot be applied',
      },
      {
        consumer: 'webhook_relay',
        offset: behind.offset,
        stream_key: accountId,
        status: 'held',
        error: null,
      },
    ]);
    // The checkpoint passed all three: the partition is not stopped.
    const checkpoint = await infrastructure.db
      .selectFrom('webhook_relay_checkpoints')
      .select('next_offset')
      .where('topic', '=', 'parking-topic')
      .executeTakeFirstOrThrow();
    expect(checkpoint.next_offset).toBe(String(Number(fine.offset) + 1));
  });
});

/** Its own account: the one above holds records behind a parked one. */
const erasureAccount = 'account-erasure';
const erasureRecord = (event: { type: DomainEvent['type']; data: unknown }) =>
  record(event, undefined, erasureAccount);
const delivery = (eventId: string) =>
  infrastructure.db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('event_id', '=', eventId)
    .executeTakeFirstOrThrow();
const keptEvents = async () =>
  (await infrastructure.db.selectFrom('webhook_relay_events').select('event_id').execute()).map(
    (row) => row.event_id,
  );
const leadName = (phone: string) =>
  infrastructure.db
    .selectFrom('webhook_lead_names')
    .select(['first_name', 'last_name'])
    .where('account_id', '=', erasureAccount)
    .where('phone', '=', phone)
    .executeTakeFirst();

describe('erasing a lead in the webhook relay', () => {
  it("redacts the lead's delivered webhooks, cancels the ones not sent and forgets its name, in log order; another lead's stay", async () => {
    // Another topic: its records start at offset 0 (a batch past the checkpoint is refused).
    offset = 0;
    const erasedPhone = '+15125550401';
    const otherPhone = '+15125550402';
    const created = erasureRecord(
      leadCreated(erasedPhone, { first_name: 'Zelda', last_name: 'Quillfeather' }),
    );
    const changed = erasureRecord(statusChanged(erasedPhone, 'new', 'contacted'));
    const other = erasureRecord(leadCreated(otherPhone, { first_name: 'Bo', last_name: 'Reyes' }));
    expect(await relayBatch(deps(), 'erasure-topic', 0, [created, changed, other])).toBe(3);

    // The first webhook was delivered, and the receiver's answer echoed the lead.
    const delivered = await delivery(created.event!.id);
    await markDelivered(delivered.id, '{"received":"Zelda Quillfeather"}');

    // The erasure as the relay reads it once the key is destroyed (the phone reads as the erased
    // marker), and then a new lead on the same number.
    const subject = infrastructure.personalDataKeys.subjectOf(erasureAccount, 'lead', erasedPhone);
    const erased = erasureRecord({
      type: 'lead.erased',
      data: { lead_id: 'lead-erased', phone: `erased:${subject}`, subject },
    });
    const newcomer = erasureRecord(leadCreated(erasedPhone, { first_name: 'Nadia', last_name: 'Stone' }));
    await relayBatch(deps(), 'erasure-topic', 0, [erased, newcomer]);

    const afterDelivery = await delivery(created.event!.id);
    expect(afterDelivery).toMatchObject({ status: 'succeeded', attempts: 1, event_type: 'lead.created' });
    expect(JSON.parse(afterDelivery.body)).toEqual({
      id: created.event!.id,
      type: 'lead.created',
      account_id: erasureAccount,
      created_at: created.event!.occurred_at,
    });
    const notSent = await delivery(changed.event!.id);
    expect(notSent).toMatchObject({ status: 'cancelled', next_attempt_at: null });
    expect(notSent.body).not.toContain(erasedPhone);
    const attempts = await infrastructure.db
      .selectFrom('webhook_delivery_attempts')
      .select('response_excerpt')
      .where('delivery_id', '=', delivered.id)
      .execute();
    expect(attempts).toEqual([{ response_excerpt: null }]);

    const kept = await keptEvents();
    expect(kept).not.toContain(created.event!.id);
    expect(kept).not.toContain(changed.event!.id);
    expect(kept).toEqual(expect.arrayContaining([other.event!.id, newcomer.event!.id]));

    // Another lead, and the new lead on the erased number, are untouched.
    const otherDelivery = await delivery(other.event!.id);
    expect(otherDelivery.status).toBe('pending');
    expect(JSON.parse(otherDelivery.body).data).toMatchObject({ phone: otherPhone, first_name: 'Bo' });
    const newcomerDelivery = await delivery(newcomer.event!.id);
    expect(newcomerDelivery.status).toBe('pending');
    expect(JSON.parse(newcomerDelivery.body).data).toMatchObject({ phone: erasedPhone, first_name: 'Nadia' });
    expect(await leadName(erasedPhone)).toEqual({ first_name: 'Nadia', last_name: 'Stone' });
    expect(await leadName(otherPhone)).toEqual({ first_name: 'Bo', last_name: 'Reyes' });
  });
});

describe("expiring an account's content in the webhook relay", () => {
  it('strips the payload of deliveries of expired messages, cancels those not sent, and keeps later ones and those without content', async () => {
    offset = 0;
    const account = 'account-retention';
    await infrastructure.db
      .insertInto('webhooks')
      .values({
        id: 'webhook-replies',
        partner_id: partnerId,
        url: 'https://hooks.example.com/replies',
        events: ['conversation.reply_received', 'lead.status_changed'],
        active: true,
        secret_ciphertext: 'v1.a.b.c',
        disabled_reason: null,
        created_at: new Date('2026-01-01T00:00:00.000Z'),
        updated_at: new Date('2026-01-01T00:00:00.000Z'),
      })
      .execute();
    const reply = (body: string, at: string) =>
      record(
        {
          type: 'conversation.reply_received',
          data: {
            phone: '+15125550501',
            lead_id: 'lead-kept',
            lead_name: null,
            message_id: newUuid(),
            message_body: body,
            message_direction: 'inbound',
          },
        },
        at,
        account,
      );
    const old = reply('My SSN ends in 5521', '2026-02-01T10:00:00.000Z');
    const oldDelivered = reply('The W-2 is attached', '2026-02-01T11:00:00.000Z');
    const status = record(
      statusChanged('+15125550501', 'new', 'contacted'),
      '2026-02-01T12:00:00.000Z',
      account,
    );
    const recent = reply('Any news?', '2026-02-20T10:00:00.000Z');
    expect(
      await relayBatch(deps(), 'retention-topic', 0, [old, oldDelivered, status, recent]),
    ).toBeGreaterThan(3);
    const delivered = await delivery(oldDelivered.event!.id);
    await markDelivered(delivered.id, '{"echo":"The W-2 is attached"}');

    const expired = record(
      { type: 'account.content_expired', data: { expired_before: '2026-02-10T00:00:00.000Z' } },
      '2026-03-12T01:00:00.000Z',
      account,
    );
    await relayBatch(deps(), 'retention-topic', 0, [expired]);

    const oldDelivery = await delivery(old.event!.id);
    expect(oldDelivery).toMatchObject({ status: 'cancelled', next_attempt_at: null });
    expect(JSON.parse(oldDelivery.body)).not.toHaveProperty('data');
    const afterDelivery = await delivery(oldDelivered.event!.id);
    expect(afterDelivery).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(JSON.parse(afterDelivery.body)).toMatchObject({
      id: oldDelivered.event!.id,
      type: 'conversation.reply_received',
    });
    expect(JSON.parse(afterDelivery.body)).not.toHaveProperty('data');
    const attempts = await infrastructure.db
      .selectFrom('webhook_delivery_attempts')
      .select('response_excerpt')
      .where('delivery_id', '=', delivered.id)
      .execute();
    expect(attempts).toEqual([{ response_excerpt: null }]);
    // A status change carries no content; a later reply is within the retention.
    const statusDeliveries = await infrastructure.db
      .selectFrom('webhook_deliveries')
      .select('body')
      .where('event_id', '=', status.event!.id)
      .execute();
    for (const row of statusDeliveries)
      expect(JSON.parse(row.body).data).toMatchObject({ phone: '+15125550501' });
    const recentDelivery = await delivery(recent.event!.id);
    expect(recentDelivery.status).toBe('pending');
    expect(JSON.parse(recentDelivery.body).data).toMatchObject({ message_body: 'Any news?' });
    const kept = await keptEvents();
    expect(kept).not.toContain(old.event!.id);
    expect(kept).not.toContain(oldDelivered.event!.id);
    expect(kept).toEqual(expect.arrayContaining([status.event!.id, recent.event!.id]));

    // Applied again (the event read again, here through another partition's checkpoint), it changes nothing.
    const before = await deliveries();
    await relayBatch(deps(), 'retention-topic-again', 0, [{ ...expired, offset: '0' }]);
    expect(await deliveries()).toEqual(before);
  });
});
