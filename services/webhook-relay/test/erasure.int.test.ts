import type { DomainEvent } from '@leadline/events';
import { connectInfrastructure, newUuid, type Infrastructure } from '@leadline/runtime';
import { createTestEnvironment, fakeClock, type TestEnvironment } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { relayBatch, type PositionedEvent } from '../src/relay';
import { leadCreated, statusChanged } from './harness';

let env: TestEnvironment;
let infrastructure: Infrastructure;
const clock = fakeClock(new Date('2030-01-07T09:00:00.000Z'));
const partnerId = 'partner-erasure';
const accountId = 'account-erasure';

beforeAll(async () => {
  env = await createTestEnvironment();
  infrastructure = await connectInfrastructure(env.config, 'leadline-relay-erasure-test');
  // The read model as the projector leaves it after a webhook.created (setup only).
  await infrastructure.db
    .insertInto('webhooks')
    .values({
      id: 'webhook-erasure',
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
function record(event: { type: DomainEvent['type']; data: unknown }): PositionedEvent {
  return {
    offset: String(offset++),
    event: {
      id: newUuid(),
      version: 1,
      account_id: accountId,
      partner_id: partnerId,
      occurred_at: '2026-02-01T00:00:00.000Z',
      actor: { kind: 'system', service: 'test' },
      correlation_id: 'test',
      causation_id: null,
      ...event,
    } as DomainEvent,
  };
}

const deps = () => ({
  db: infrastructure.db,
  clock,
  newId: newUuid,
  personalDataKeys: infrastructure.personalDataKeys,
});
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
    .where('account_id', '=', accountId)
    .where('phone', '=', phone)
    .executeTakeFirst();

describe('erasing a lead in the webhook relay', () => {
  it("redacts the lead's delivered webhooks, cancels the ones not sent and forgets its name, in log order; another lead's stay", async () => {
    const erasedPhone = '+15125550401';
    const otherPhone = '+15125550402';
    const created = record(leadCreated(erasedPhone, { first_name: 'Zelda', last_name: 'Quillfeather' }));
    const changed = record(statusChanged(erasedPhone, 'new', 'contacted'));
    const other = record(leadCreated(otherPhone, { first_name: 'Bo', last_name: 'Reyes' }));
    expect(await relayBatch(deps(), 'topic', 0, [created, changed, other])).toBe(3);

    // The first webhook was delivered, and the receiver's answer echoed the lead.
    const delivered = await delivery(created.event!.id);
    await infrastructure.db
      .updateTable('webhook_deliveries')
      .set({ status: 'succeeded', attempts: 1, completed_at: clock.now(), last_status_code: 200 })
      .where('id', '=', delivered.id)
      .execute();
    await infrastructure.db
      .insertInto('webhook_delivery_attempts')
      .values({
        delivery_id: delivered.id,
        attempt: 1,
        attempted_at: clock.now(),
        status_code: 200,
        error: null,
        duration_ms: 12,
        response_excerpt: '{"received":"Zelda Quillfeather"}',
      })
      .execute();

    // The erasure as the relay reads it once the key is destroyed (the phone reads as the erased
    // marker), and then a new lead on the same number.
    const subject = infrastructure.personalDataKeys.subjectOf(accountId, 'lead', erasedPhone);
    const erased = record({
      type: 'lead.erased',
      data: { lead_id: 'lead-erased', phone: `erased:${subject}`, subject },
    });
    const newcomer = record(leadCreated(erasedPhone, { first_name: 'Nadia', last_name: 'Stone' }));
    await relayBatch(deps(), 'topic', 0, [erased, newcomer]);

    const afterDelivery = await delivery(created.event!.id);
    expect(afterDelivery).toMatchObject({ status: 'succeeded', attempts: 1, event_type: 'lead.created' });
    expect(JSON.parse(afterDelivery.body)).toEqual({
      id: created.event!.id,
      type: 'lead.created',
      account_id: accountId,
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
