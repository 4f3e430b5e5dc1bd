import type { DomainEvent, WebhookEnvelope } from '@leadline/events';
import type { Clock, Database } from '@leadline/runtime';
import { sql, type Insertable, type Kysely, type Transaction } from 'kysely';
import { v5 as uuidv5 } from 'uuid';

const INSERT_CHUNK = 500;

/** The namespace of delivery ids: one fixed, random UUID, never to change (ids would change with it). */
const DELIVERY_ID_NAMESPACE = '8f0b7a52-5c1e-4d55-9a3e-0c4f6d2b9e71';

/**
 * The delivery id of one event for one webhook: derived, not drawn, so that fanning the same event
 * out again (a replayed batch, a back-fill) names the same delivery, and the receiver's dedupe on
 * `X-Service-Delivery-Id` holds across relay crashes.
 */
export function deliveryIdOf(eventId: string, webhookId: string): string {
  return uuidv5(`${eventId}\u0000${webhookId}`, DELIVERY_ID_NAMESPACE);
}

/**
 * Fan-out and back-fill exclude each other through this lock: a fan-out holds it shared from the
 * moment it reads the webhooks until its deliveries commit, a back-fill holds it alone. Without it a
 * back-fill could miss an event whose fan-out read the webhooks before the new one was projected and
 * committed after the back-fill looked.
 */
const fanOutLock = (mode: 'shared' | 'exclusive') =>
  mode === 'shared'
    ? sql`select pg_advisory_xact_lock_shared(hashtextextended('leadline.webhook-relay.fan-out', 0))`
    : sql`select pg_advisory_xact_lock(hashtextextended('leadline.webhook-relay.fan-out', 0))`;

type DeliveryInsert = Insertable<Database['webhook_deliveries']>;

function deliveryRow(
  webhookId: string,
  event: {
    event_id: string;
    partner_id: string;
    account_id: string | null;
    event_type: string;
    body: string;
  },
  now: Date,
): DeliveryInsert {
  return {
    id: deliveryIdOf(event.event_id, webhookId),
    webhook_id: webhookId,
    partner_id: event.partner_id,
    account_id: event.account_id,
    event_id: event.event_id,
    event_type: event.event_type,
    body: event.body,
    status: 'pending',
    next_attempt_at: now,
    last_status_code: null,
    last_error: null,
    created_at: now,
    completed_at: null,
  };
}

async function insertDeliveries(trx: Transaction<Database>, rows: DeliveryInsert[]): Promise<number> {
  let queued = 0;
  for (let start = 0; start < rows.length; start += INSERT_CHUNK) {
    const result = await trx
      .insertInto('webhook_deliveries')
      .values(rows.slice(start, start + INSERT_CHUNK))
      .onConflict((oc) => oc.columns(['webhook_id', 'event_id']).doNothing())
      .executeTakeFirst();
    queued += Number(result.numInsertedOrUpdatedRows ?? 0n);
  }
  return queued;
}

/**
 * Which webhooks receive an event: those of the event's partner that are active and subscribe to its
 * type when the relay processes it, and that existed when it happened (a new webhook does not receive
 * the history, so a relay catching up after downtime sends only what each webhook signed up for).
 * Each event is also kept in `webhook_relay_events`, for a webhook registered before it happened but
 * projected after this fan-out (see `backfillNewWebhooks`).
 */
export async function queueDeliveries(
  trx: Transaction<Database>,
  mapped: { event: DomainEvent; webhookEvent: WebhookEnvelope }[],
  now: Date,
): Promise<number> {
  if (mapped.length === 0) return 0;
  await fanOutLock('shared').execute(trx);
  const events = mapped.map(({ event, webhookEvent }) => ({
    event_id: webhookEvent.id,
    partner_id: event.partner_id,
    account_id: webhookEvent.account_id,
    event_type: webhookEvent.type,
    occurred_at: new Date(event.occurred_at),
    // Serialized once: these exact bytes are what every attempt sends and signs.
    body: JSON.stringify(webhookEvent),
    relayed_at: now,
  }));
  for (let start = 0; start < events.length; start += INSERT_CHUNK) {
    await trx
      .insertInto('webhook_relay_events')
      .values(events.slice(start, start + INSERT_CHUNK))
      .onConflict((oc) => oc.column('event_id').doNothing())
      .execute();
  }

  const partners = [...new Set(events.map((event) => event.partner_id))];
  const webhooks = await trx
    .selectFrom('webhooks')
    .select(['id', 'partner_id', 'events', 'created_at'])
    .where('partner_id', 'in', partners)
    .where('active', '=', true)
    .execute();
  if (webhooks.length === 0) return 0;

  const rows: DeliveryInsert[] = [];
  for (const event of events) {
    for (const webhook of webhooks) {
      if (
        webhook.partner_id === event.partner_id &&
        webhook.events.includes(event.event_type) &&
        webhook.created_at <= event.occurred_at
      ) {
        rows.push(deliveryRow(webhook.id, event, now));
      }
    }
  }
  return insertDeliveries(trx, rows);
}

/**
 * Queues, for each webhook the relay has not seen before, the deliveries of the events that happened
 * after its registration and were already fanned out without it: the relay reads registrations from
 * the read model, which may lag the log, so a webhook registered before an event can be projected
 * after that event's fan-out. Runs once per webhook; derived delivery ids and the unique
 * (webhook_id, event_id) make a repeat harmless. Returns the deliveries queued.
 */
export async function backfillNewWebhooks(db: Kysely<Database>, clock: Clock): Promise<number> {
  const fresh = await db
    .selectFrom('webhooks as w')
    .select(['w.id', 'w.partner_id', 'w.events', 'w.created_at', 'w.active'])
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('webhook_relay_backfills as b')
            .select('b.webhook_id')
            .whereRef('b.webhook_id', '=', 'w.id'),
        ),
      ),
    )
    .execute();
  if (fresh.length === 0) return 0;
  return db.transaction().execute(async (trx) => {
    await fanOutLock('exclusive').execute(trx);
    const now = clock.now();
    let queued = 0;
    for (const webhook of fresh) {
      if (webhook.active && webhook.events.length > 0) {
        const missed = await trx
          .selectFrom('webhook_relay_events as e')
          .select(['e.event_id', 'e.partner_id', 'e.account_id', 'e.event_type', 'e.body'])
          .where('e.partner_id', '=', webhook.partner_id)
          .where('e.occurred_at', '>=', webhook.created_at)
          .where('e.event_type', 'in', webhook.events)
          .orderBy('e.occurred_at')
          .execute();
        queued += await insertDeliveries(
          trx,
          missed.map((event) => deliveryRow(webhook.id, event, now)),
        );
      }
      await trx
        .insertInto('webhook_relay_backfills')
        .values({ webhook_id: webhook.id, done_at: now })
        .onConflict((oc) => oc.column('webhook_id').doNothing())
        .execute();
    }
    return queued;
  });
}

/** Forgets fanned-out events older than the back-fill window, and the marks of deleted webhooks. */
export async function pruneRelayedEvents(db: Kysely<Database>, before: Date): Promise<void> {
  await db.deleteFrom('webhook_relay_events').where('relayed_at', '<', before).execute();
  await sql`
    delete from webhook_relay_backfills b
    where b.done_at < ${before} and not exists (select 1 from webhooks w where w.id = b.webhook_id)`.execute(
    db,
  );
}
