import { randomUUID } from 'node:crypto';
import { leaseUntil, type Clock, type ClaimRequest, type Database } from '@leadline/runtime';
import { sql, type Kysely } from 'kysely';
import {
  orphanReason,
  type Attempt,
  type ClaimedRow,
  type DeliveryChange,
  type DeliveryRow,
  type OutboxEvent,
} from './delivery-policy';

/**
 * The deliveries table as a leased queue: the statements the dispatcher's worker runs. Every write after
 * the claim is guarded by the claim's token, so a relay whose lease ran out (taken over by another)
 * changes nothing.
 */

/**
 * Leases up to `limit` due deliveries and returns them with their webhooks. Fair across webhooks:
 * every webhook with due deliveries gets its oldest few considered (a loose index scan over the
 * webhooks with pending deliveries, so one webhook's backlog is never scanned whole), at most
 * `perWebhook` minus what this relay already holds of it (`held`), and the first turn of every webhook
 * goes before the second turn of any. The UPDATE re-checks the lease of each row it takes, so two relays
 * claiming together never take the same delivery.
 */
export async function claimDeliveries(
  db: Kysely<Database>,
  now: Date,
  leaseMs: number,
  perWebhook: number,
  { limit, held }: ClaimRequest,
): Promise<ClaimedRow[]> {
  const token = randomUUID();
  const { rows } = await sql<ClaimedRow>`
    with recursive hooks(webhook_id) as (
      (select webhook_id from webhook_deliveries where status = 'pending' order by webhook_id limit 1)
      union all
      select (
        select d.webhook_id from webhook_deliveries d
        where d.status = 'pending' and d.webhook_id > hooks.webhook_id
        order by d.webhook_id limit 1
      )
      from hooks where hooks.webhook_id is not null
    ),
    candidates as (
      select c.id, h.webhook_id, c.next_attempt_at,
        row_number() over (partition by h.webhook_id order by c.next_attempt_at)
          + coalesce(busy.sending, 0) as turn
      from hooks h
      left join unnest(${[...held.keys()]}::text[], ${[...held.values()]}::int[])
        as busy(webhook_id, sending) on busy.webhook_id = h.webhook_id
      cross join lateral (
        select d.id, d.next_attempt_at
        from webhook_deliveries d
        where d.webhook_id = h.webhook_id and d.status = 'pending' and d.next_attempt_at <= ${now}
          and (d.leased_until is null or d.leased_until <= ${now})
        order by d.next_attempt_at
        limit ${perWebhook}
      ) c
      where h.webhook_id is not null
    ),
    picked as (
      select id, webhook_id from candidates
      where turn <= ${perWebhook}
      order by turn, next_attempt_at limit ${limit}
    )
    update webhook_deliveries d
    set leased_until = ${leaseUntil(now, leaseMs)}, claim_token = ${token}
    from picked
    left join webhooks w on w.id = picked.webhook_id
    where d.id = picked.id and d.status = 'pending'
      and (d.leased_until is null or d.leased_until <= ${now})
    returning d.*, w.url, w.active, w.secret_ciphertext`.execute(db);
  return rows;
}

/** Disabled or deleted since the event was fanned out: nothing more goes to it. */
export async function cancelOrphans(db: Kysely<Database>, rows: readonly ClaimedRow[], now: Date) {
  if (rows.length === 0) return;
  await sql`
    update webhook_deliveries as d set status = 'cancelled', next_attempt_at = null,
      completed_at = ${now}, leased_until = null, claim_token = null, last_error = v.reason
    from unnest(${rows.map((row) => row.id)}::text[], ${rows.map((row) => row.claim_token)}::text[],
                ${rows.map((row) => orphanReason(row) ?? null)}::text[]) as v(id, token, reason)
    where d.id = v.id and d.claim_token = v.token`.execute(db);
}

/** Hands claimed deliveries back: due again at `until` (at once without it), for any relay. */
export async function releaseDeliveries(db: Kysely<Database>, rows: readonly ClaimedRow[], until?: Date) {
  if (rows.length === 0) return;
  await sql`
    update webhook_deliveries as d set leased_until = ${until ?? null}::timestamptz, claim_token = null
    from unnest(${rows.map((row) => row.id)}::text[], ${rows.map((row) => row.claim_token)}::text[])
      as v(id, token)
    where d.id = v.id and d.claim_token = v.token`.execute(db);
}

/** When a pending delivery next falls due or a lease on one runs out; null when none is pending. */
export async function nextDelivery(db: Kysely<Database>): Promise<Date | null> {
  const { rows } = await sql<{ at: Date | null }>`
    select min(greatest(next_attempt_at, leased_until)) as at
    from webhook_deliveries where status = 'pending'`.execute(db);
  return rows[0]?.at ?? null;
}

/** Pending deliveries, and how overdue the most overdue one is. */
export async function measureDeliveries(db: Kysely<Database>, now: Date) {
  const { rows } = await sql<{ depth: string; lateness: number | null }>`
    select count(*)::text as depth,
           extract(epoch from ${now}::timestamptz
             - min(next_attempt_at) filter (where next_attempt_at <= ${now}))::float8 as lateness
    from webhook_deliveries where status = 'pending'`.execute(db);
  return { depth: Number(rows[0]?.depth ?? 0), latenessSeconds: rows[0]?.lateness ?? 0 };
}

/** An attempt's outcome, ready to be written under the claim that made it. */
export interface Outcome {
  delivery: DeliveryRow;
  token: string;
  attempt: Attempt;
  row: DeliveryChange;
  outbox: OutboxEvent | undefined;
  /** After a 410: this relay's queued deliveries of the webhook, cancelled with the others. */
  dropped: readonly ClaimedRow[];
}

/**
 * Writes outcomes: the attempts log and each delivery's new state in one statement, only where the
 * claim still holds (a lease that ran out was taken over; the other relay's record counts), and in
 * the same transaction the outbox rows and, for a webhook that answered 410, the cancellation of
 * its other pending deliveries.
 */
async function writeOutcomes(trx: Kysely<Database>, outcomes: readonly Outcome[], clock: Clock) {
  const column = <T>(pick: (outcome: Outcome) => T) => outcomes.map(pick);
  const { rows: kept } = await sql<{ id: string }>`
    with v as (
      select * from unnest(
        ${column((o) => o.delivery.id)}::text[], ${column((o) => o.token)}::text[],
        ${column((o) => o.row.status)}::text[], ${column((o) => o.row.attempts)}::int[],
        ${column((o) => o.row.retries_done)}::int[],
        ${column((o) => o.row.next_attempt_at)}::timestamptz[],
        ${column((o) => o.row.completed_at)}::timestamptz[],
        ${column((o) => o.row.last_status_code)}::int[], ${column((o) => o.row.last_error)}::text[],
        ${column((o) => o.attempt.attemptedAt)}::timestamptz[],
        ${column((o) => o.attempt.result.durationMs)}::int[],
        ${column((o) => o.attempt.result.responseExcerpt)}::text[]
      ) as v(id, token, status, attempts, retries_done, next_attempt_at, completed_at, last_status_code,
             last_error, attempted_at, duration_ms, response_excerpt)
    ),
    updated as (
      update webhook_deliveries as d set
        status = v.status, attempts = v.attempts, retries_done = v.retries_done,
        next_attempt_at = v.next_attempt_at, completed_at = v.completed_at,
        last_status_code = v.last_status_code, last_error = v.last_error,
        leased_until = null, claim_token = null
      from v
      where d.id = v.id and d.claim_token = v.token
      returning d.id
    ),
    logged as (
      insert into webhook_delivery_attempts
        (delivery_id, attempt, attempted_at, status_code, error, duration_ms, response_excerpt)
      select v.id, v.attempts, v.attempted_at, v.last_status_code, v.last_error, v.duration_ms, v.response_excerpt
      from v join updated using (id)
      on conflict do nothing
    )
    select id from updated`.execute(trx);
  const keptIds = new Set(kept.map((row) => row.id));
  for (const { outbox, delivery, dropped } of outcomes) {
    if (!outbox || !keptIds.has(delivery.id)) continue;
    await trx
      .insertInto('webhook_relay_outbox')
      .values({
        id: outbox.id,
        partner_id: outbox.partner_id,
        correlation_id: outbox.correlation_id,
        event: JSON.stringify(outbox.event) as never,
        created_at: clock.now(),
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    if (outbox.event.type !== 'webhook.disabled') continue;
    // Its other pending deliveries go nowhere now; one another relay is sending records its answer.
    await sql`
      update webhook_deliveries set status = 'cancelled', next_attempt_at = null,
        completed_at = ${clock.now()}, last_error = 'Webhook disabled by a 410 answer'
      where webhook_id = ${delivery.webhook_id} and status = 'pending'
        and (leased_until is null or leased_until <= ${clock.now()}
             or claim_token = any(${dropped.map((row) => row.claim_token!)}::text[]))`.execute(trx);
  }
}

/**
 * Group commit of outcomes: whoever finds the writer idle writes every outcome waiting, up to 200 in
 * one statement (one transaction when some carry outbox rows). `record` resolves once its outcome is
 * written or its failure reported; whether any outbox row was written is passed to `written`.
 */
export function createOutcomeWriter(deps: {
  db: Kysely<Database>;
  clock: Clock;
  onError: (error: unknown) => void;
  written: (withOutbox: boolean) => void;
}) {
  const { db, clock, onError } = deps;
  const pending: { outcome: Outcome; done: () => void }[] = [];
  let writing = false;

  async function writeWaiting() {
    if (writing) return;
    writing = true;
    try {
      while (pending.length > 0) {
        const batch = pending.splice(0, 200);
        const outcomes = batch.map((entry) => entry.outcome);
        const withOutbox = outcomes.some((outcome) => outcome.outbox);
        try {
          // Without outbox rows it is one statement: atomic on its own, one round trip.
          if (withOutbox) await db.transaction().execute((trx) => writeOutcomes(trx, outcomes, clock));
          else await writeOutcomes(db, outcomes, clock);
        } catch (error) {
          // One outcome that cannot be written must not take the others down with it.
          if (batch.length === 1) onError(error);
          else {
            for (const outcome of outcomes) {
              await db
                .transaction()
                .execute((trx) => writeOutcomes(trx, [outcome], clock))
                .catch(onError);
            }
          }
        }
        deps.written(withOutbox);
        for (const entry of batch) entry.done();
      }
    } finally {
      writing = false;
    }
  }

  return (outcome: Outcome): Promise<void> =>
    new Promise<void>((resolve) => {
      pending.push({ outcome, done: resolve });
      void writeWaiting();
    });
}
