import type { DomainEvent } from '@leadline/events';
import type { CommandBus } from '@leadline/runtime';
import { eventually } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveryIdOf } from '../src/fan-out';
import {
  leadCreated,
  startHarness,
  type Harness,
  type Partner,
  type RelayInstance,
} from '../../../system-test/relay';

let harness: Harness;
let relay: RelayInstance;

beforeAll(async () => {
  harness = await startHarness();
  relay = await harness.startRelayInstance();
});
afterAll(() => harness?.close());

const SECRET = 'whsec_durable_0123456789';

async function createWebhook(partner: Partner, path: string) {
  const response = await partner.api.post('/webhooks', {
    url: harness.receiver.url(path),
    events: ['lead.created'],
    secret: SECRET,
  });
  expect(response.status).toBe(201);
  return response.body as { id: string };
}

/** Waits until the relay has fanned the event out (whoever it went to). */
async function fannedOut(eventId: string) {
  await eventually(async () =>
    (await harness.system.services.db
      .selectFrom('webhook_relay_events')
      .select('event_id')
      .where('event_id', '=', eventId)
      .executeTakeFirst())
      ? true
      : undefined,
  );
}

describe('what the relay must never lose', () => {
  it('delivers an event to a webhook registered before it even when the registration is projected after the fan-out', async () => {
    const partner = await harness.createPartner('Late CRM');
    const [before] = await harness.append(partner, [leadCreated('+15125560001')]);
    await fannedOut(before!.id);

    const webhook = await createWebhook(partner, '/late');
    // The read model as a lagging projector leaves it: the registration is on the log, not yet in
    // the webhooks table, while the relay fans out the next event.
    const { db } = harness.system.services;
    const row = await db
      .selectFrom('webhooks')
      .selectAll()
      .where('id', '=', webhook.id)
      .executeTakeFirstOrThrow();
    await db.deleteFrom('webhooks').where('id', '=', webhook.id).execute();
    const [after] = await harness.append(partner, [leadCreated('+15125560002')]);
    await fannedOut(after!.id);
    expect(
      await db.selectFrom('webhook_deliveries').select('id').where('webhook_id', '=', webhook.id).execute(),
    ).toHaveLength(0);

    // The projector catches up; the relay's next pass finds the webhook new.
    await db.insertInto('webhooks').values(row).execute();
    await relay.dispatcher.drain();
    const received = harness.receiver.requests('/late');
    expect(
      received.map((request) => (JSON.parse(request.body.toString('utf8')) as { id: string }).id),
    ).toEqual([after!.id]);
    expect(received[0]!.headers['x-service-delivery-id']).toBe(deliveryIdOf(after!.id, webhook.id));

    // Once found, it is not back-filled again, and what follows reaches it the ordinary way.
    const [next] = await harness.append(partner, [leadCreated('+15125560003')]);
    await fannedOut(next!.id);
    await relay.dispatcher.drain();
    expect(harness.receiver.requests('/late')).toHaveLength(2);
  });

  it('appends webhook.disabled after a 410 even when the relay that decided it could not, exactly once', async () => {
    // A relay whose event log is unreachable: it records the attempt and settles the deliveries, and
    // the fact it could not append stays in the outbox when it goes away.
    const cutOff = await harness.startRelayInstance({
      consume: false,
      commands: {
        append: async () => {
          throw new Error('the event log is unavailable');
        },
      },
    });
    const appended: DomainEvent[] = [];
    const commands: Pick<CommandBus, 'append'> = {
      async append(facts) {
        const events = await harness.system.services.commands.append(facts);
        appended.push(...events);
        return events;
      },
    };
    const partner = await harness.createPartner('Gone CRM');
    harness.receiver.answer('/gone', { status: 410 });
    const webhook = await createWebhook(partner, '/gone');
    const [event] = await harness.append(partner, [leadCreated('+15125560004')]);
    await fannedOut(event!.id);

    await expect(cutOff.dispatcher.drain()).rejects.toThrow();
    await cutOff.stop();
    const delivery = await harness.system.services.db
      .selectFrom('webhook_deliveries')
      .select(['id', 'status'])
      .where('webhook_id', '=', webhook.id)
      .executeTakeFirstOrThrow();
    expect(delivery.status).toBe('failed');

    // Another relay's next pass appends it, once, and the webhook is disabled.
    const next = await harness.startRelayInstance({ consume: false, commands });
    try {
      await next.dispatcher.drain();
      await next.dispatcher.drain();
      expect(appended.map((e) => e.type)).toEqual(['webhook.disabled']);
      expect(appended[0]!.data).toMatchObject({ webhook_id: webhook.id, delivery_id: delivery.id });
      const { body } = await partner.api.get('/webhooks');
      expect(body.webhooks.find((w: { id: string }) => w.id === webhook.id).active).toBe(false);
      expect(harness.receiver.requests('/gone')).toHaveLength(1);
    } finally {
      await next.stop();
    }
  });
});
