import type { WebhookEventType } from '@leadline/events';
import { notFound, type Database, type WebhookDeliveryStatus } from '@leadline/runtime';
import type { Kysely, Selectable } from 'kysely';
import type { z } from 'zod';
import type { PartnerWebhooksState, Webhook } from '@leadline/domain';
import type { deliveryResponse, webhookResponse } from './schemas';

type WebhookRow = Selectable<Database['webhooks']>;

/** Every webhook read is scoped by the caller's partner: another partner's webhook does not exist. */
export function findWebhookRow(db: Kysely<Database>, partnerId: string, webhookId: string) {
  return db
    .selectFrom('webhooks')
    .selectAll()
    .where('partner_id', '=', partnerId)
    .where('id', '=', webhookId)
    .executeTakeFirst();
}

/** The partner's webhook, or a 404: another partner's webhook does not exist. */
export async function requireWebhookRow(db: Kysely<Database>, partnerId: string, webhookId: string) {
  const row = await findWebhookRow(db, partnerId, webhookId);
  if (!row) throw notFound('webhook');
  return row;
}

export function listWebhookRows(db: Kysely<Database>, partnerId: string) {
  return db
    .selectFrom('webhooks')
    .selectAll()
    .where('partner_id', '=', partnerId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

const toWebhook = (row: WebhookRow): Webhook => ({
  id: row.id,
  url: row.url,
  events: row.events as WebhookEventType[],
  active: row.active,
});

export async function loadPartnerWebhooks(
  db: Kysely<Database>,
  partnerId: string,
): Promise<PartnerWebhooksState> {
  return { webhooks: (await listWebhookRows(db, partnerId)).map(toWebhook) };
}

/** The secret is never part of a response, not even encrypted. */
export function toWebhookResponse(row: WebhookRow): z.infer<typeof webhookResponse> {
  return { ...toWebhook(row), events: [...toWebhook(row).events], created_at: row.created_at.toISOString() };
}

export async function listDeliveries(
  db: Kysely<Database>,
  webhookId: string,
  query: { limit: number; offset: number; status?: WebhookDeliveryStatus | undefined },
): Promise<{ deliveries: z.infer<typeof deliveryResponse>[]; total: number }> {
  let filtered = db.selectFrom('webhook_deliveries').where('webhook_id', '=', webhookId);
  if (query.status) filtered = filtered.where('status', '=', query.status);
  const [rows, count] = await Promise.all([
    filtered
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(query.limit)
      .offset(query.offset)
      .execute(),
    filtered.select((eb) => eb.fn.countAll<string>().as('total')).executeTakeFirstOrThrow(),
  ]);
  const attempts =
    rows.length === 0
      ? []
      : await db
          .selectFrom('webhook_delivery_attempts')
          .selectAll()
          .where(
            'delivery_id',
            'in',
            rows.map((row) => row.id),
          )
          .orderBy('attempt')
          .execute();
  const deliveries = rows.map((row) => ({
    id: row.id,
    event_id: row.event_id,
    event_type: row.event_type,
    account_id: row.account_id,
    status: row.status,
    attempt_count: row.attempts,
    next_attempt_at: row.next_attempt_at?.toISOString() ?? null,
    last_status_code: row.last_status_code,
    last_error: row.last_error,
    created_at: row.created_at.toISOString(),
    completed_at: row.completed_at?.toISOString() ?? null,
    attempts: attempts
      .filter((attempt) => attempt.delivery_id === row.id)
      .map((attempt) => ({
        attempt: attempt.attempt,
        attempted_at: attempt.attempted_at.toISOString(),
        status_code: attempt.status_code,
        error: attempt.error,
        duration_ms: attempt.duration_ms,
        response_excerpt: attempt.response_excerpt,
      })),
  }));
  return { deliveries, total: Number(count.total) };
}

/**
 * A manual retry starts the delivery's schedule over: one attempt now and, should it fail, the full
 * retry schedule again. A delivery that is still pending is already on its way (409).
 */
export async function requeueDelivery(
  db: Kysely<Database>,
  webhookId: string,
  deliveryId: string,
  now: Date,
): Promise<'requeued' | 'pending' | 'not_found'> {
  const updated = await db
    .updateTable('webhook_deliveries')
    .set({ status: 'pending', next_attempt_at: now, retries_done: 0, completed_at: null })
    .where('id', '=', deliveryId)
    .where('webhook_id', '=', webhookId)
    .where('status', '!=', 'pending')
    .executeTakeFirst();
  if (updated.numUpdatedRows > 0n) return 'requeued';
  const existing = await db
    .selectFrom('webhook_deliveries')
    .select('status')
    .where('id', '=', deliveryId)
    .where('webhook_id', '=', webhookId)
    .executeTakeFirst();
  return existing ? 'pending' : 'not_found';
}

/** Queues a signed `webhook.test` event for the relay to deliver like any other. */
export async function queueTestDelivery(
  db: Kysely<Database>,
  webhook: { id: string; partner_id: string },
  ids: { deliveryId: string; eventId: string },
  now: Date,
): Promise<void> {
  const body = JSON.stringify({
    id: ids.eventId,
    type: 'webhook.test',
    account_id: null,
    created_at: now.toISOString(),
    data: { webhook_id: webhook.id, message: 'A test event from Leadline: your endpoint is reachable.' },
  });
  await db
    .insertInto('webhook_deliveries')
    .values({
      id: ids.deliveryId,
      webhook_id: webhook.id,
      partner_id: webhook.partner_id,
      account_id: null,
      event_id: ids.eventId,
      event_type: 'webhook.test',
      body,
      status: 'pending',
      next_attempt_at: now,
      last_status_code: null,
      last_error: null,
      created_at: now,
      completed_at: null,
    })
    .execute();
}
