import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import {
  watchQueue,
  type Clock,
  type CommandBus,
  type Database,
  type SecretBinding,
  type SecretBox,
  type WebhookDeliveryStatus,
} from '@leadline/runtime';
import { sql, type Kysely, type Selectable } from 'kysely';
import { backfillNewWebhooks, pruneRelayedEvents } from './fan-out';
import type { SendResult, WebhookClient } from './http-client';
import { nextStep, parseRetryAfter, type AttemptOutcome } from './schedule';
import { signatureHeaders } from './signing';

type DeliveryRow = Selectable<Database['webhook_deliveries']>;
type ClaimedRow = DeliveryRow & {
  url: string | null;
  active: boolean | null;
  secret_ciphertext: string | null;
};

export interface DispatcherDeps {
  db: Kysely<Database>;
  clock: Clock;
  client: WebhookClient;
  secrets: SecretBox;
  retryDelaysSeconds: readonly number[];
  /** Attempts in flight at once, over all webhooks. */
  concurrency: number;
  /**
   * Attempts in flight at once to one webhook (2 by default), so a partner whose endpoint hangs or
   * answers slowly holds at most this many of the relay's slots and delays no other partner.
   */
  endpointConcurrency?: number;
  /**
   * How long a claimed delivery stays leased to this relay: longer than one attempt can take (the
   * client's timeout) plus recording it. A relay that dies leaves its leases to run out, and the
   * deliveries are then due again, with the same delivery id.
   */
  leaseMs?: number;
  /**
   * The longest one attempt takes (the client's timeout): a claimed delivery that waited in this
   * relay's queue until less than this is left of its lease is handed back instead of sent.
   */
  attemptTimeoutMs?: number;
  /** Appends webhook.disabled and webhook.delivery_failed to the partner topic. */
  commands: Pick<CommandBus, 'append'>;
  /**
   * Longest idle wait when nothing wakes the loop: a safety net for a missed notification; the loop
   * wakes on the next due time, on `wake` (NOTIFY) and as attempts finish.
   */
  pollIntervalMs?: number;
  /** How long fanned-out events are kept for webhooks projected late (see backfillNewWebhooks). */
  backfillWindowMs?: number;
  onError?: (error: unknown) => void;
}

export interface Dispatcher {
  /** Sends every attempt due at the clock's now, until none is left; returns how many were sent. */
  drain(): Promise<number>;
  /** Runs in the background: on `wake`, when the next attempt falls due, and as attempts finish. */
  start(): void;
  /** Deliveries were queued (or a lease ran out elsewhere): look for due ones now. */
  wake(): void;
  /** Webhooks may have been projected: look for new ones to back-fill on the next pass. */
  webhooksChanged(): void;
  stop(): Promise<void>;
}

/** A fact the relay decided and must put on the partner topic, kept in its outbox until it is. */
interface OutboxEvent {
  id: string;
  partner_id: string;
  correlation_id: string;
  event:
    | {
        type: 'webhook.disabled';
        data: { webhook_id: string; reason: 'gone'; delivery_id: string; status_code: number };
      }
    | {
        type: 'webhook.delivery_failed';
        data: {
          webhook_id: string;
          delivery_id: string;
          event_id: string;
          event_type: string;
          account_id: string | null;
          attempts: number;
          last_status_code: number | null;
          last_error: string | null;
        };
      };
}

interface Outcome {
  delivery: DeliveryRow;
  token: string;
  attemptedAt: Date;
  result: SendResult;
  row: {
    status: WebhookDeliveryStatus;
    attempts: number;
    retries_done: number;
    next_attempt_at: Date | null;
    completed_at: Date | null;
    last_status_code: number | null;
    last_error: string | null;
  };
  outbox: OutboxEvent | undefined;
  /** After a 410: this relay's queued deliveries of the webhook, cancelled with the others. */
  dropped: ClaimedRow[];
}

const outcomeOf = (statusCode: number | null, retryAfter: number | null): AttemptOutcome => {
  if (statusCode !== null && statusCode >= 200 && statusCode < 300) return { kind: 'succeeded' };
  if (statusCode === 410) return { kind: 'gone' };
  return { kind: 'failed', retryAfterSeconds: retryAfter };
};

/**
 * Sends due deliveries without holding a transaction or a row lock across a partner's endpoint:
 *   1. claim: one statement leases a few due deliveries (fairly across webhooks, at most
 *      `endpointConcurrency` leased per webhook) and commits;
 *   2. send: each POST runs outside any transaction, bounded by the client's timeout;
 *   3. record: each outcome is written in a short transaction of its own (outcomes finishing together
 *      share one, and fall back to one each if that fails), only under the claim that sent it.
 * A relay that dies between 1 and 3 leaves leases that run out; the deliveries are then sent again
 * under the same delivery id: at-least-once, for the receiver to dedupe on.
 */
export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const { db, clock, client, secrets, retryDelaysSeconds, commands } = deps;
  const concurrency = Math.max(1, deps.concurrency);
  const endpointConcurrency = Math.max(1, deps.endpointConcurrency ?? 2);
  const leaseMs = deps.leaseMs ?? 60_000;
  const attemptTimeoutMs = Math.min(deps.attemptTimeoutMs ?? leaseMs / 2, leaseMs);
  /**
   * Claimed ahead of free slots, so an ending attempt's slot is taken without a round trip: three
   * times the slots, since one claim (a round trip and a commit) lasts as long as several attempts on
   * a busy machine, and a queue shorter than what ends meanwhile leaves slots idle while it runs.
   */
  const queueLimit = 3 * concurrency;
  /** What one webhook may have claimed in this relay at once: sending, plus three times as many waiting. */
  const perWebhookClaimed = 4 * endpointConcurrency;
  const pollIntervalMs = deps.pollIntervalMs ?? 5000;
  const backfillWindowMs = deps.backfillWindowMs ?? 24 * 3600 * 1000;
  const reportError = deps.onError ?? ((error) => console.error('webhook-relay: dispatch failed', error));

  /** The POSTs under way (one slot each) and, per webhook, how many of them go to it. */
  const inFlight = new Set<Promise<void>>();
  const sendingTo = new Map<string, number>();
  /** Claimed deliveries waiting for a slot, oldest claim first, and how many per webhook. */
  const queue: ClaimedRow[] = [];
  const queuedFor = new Map<string, number>();
  const bump = (counts: Map<string, number>, key: string, by: number) => {
    const value = (counts.get(key) ?? 0) + by;
    if (value > 0) counts.set(key, value);
    else counts.delete(key);
  };
  /** Outcomes being recorded: their deliveries stay leased until written. */
  const writes = new Set<Promise<void>>();
  let attemptsSent = 0;

  /**
   * Leases up to `limit` due deliveries and returns them with their webhooks. Fair across webhooks:
   * every webhook with due deliveries gets its oldest few considered (a loose index scan over the
   * webhooks with pending deliveries, so one webhook's backlog is never scanned whole), at most
   * four times `endpointConcurrency` minus what this relay already holds of it (a quarter is sent
   * while the rest waits in the queue), and the first turn of
   * every webhook goes before the second turn of any. The UPDATE re-checks the lease of each row it
   * takes, so two relays claiming together never take the same delivery. (The cap is per relay: a
   * hanging endpoint holds at most `endpointConcurrency` slots of each relay.)
   */
  async function claim(limit: number): Promise<ClaimedRow[]> {
    const now = clock.now();
    const until = new Date(now.getTime() + leaseMs);
    const token = randomUUID();
    const held = new Map(sendingTo);
    for (const [webhookId, count] of queuedFor) bump(held, webhookId, count);
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
          limit ${perWebhookClaimed}
        ) c
        where h.webhook_id is not null
      ),
      picked as (
        select id, webhook_id from candidates
        where turn <= ${perWebhookClaimed}
        order by turn, next_attempt_at limit ${limit}
      )
      update webhook_deliveries d
      set leased_until = ${until}, claim_token = ${token}
      from picked
      left join webhooks w on w.id = picked.webhook_id
      where d.id = picked.id and d.status = 'pending'
        and (d.leased_until is null or d.leased_until <= ${now})
      returning d.*, w.url, w.active, w.secret_ciphertext`.execute(db);
    return rows;
  }

  const openSecret = (() => {
    // Decrypting is cheap but not free; a webhook's ciphertext only changes with the webhook.
    const cache = new Map<string, string>();
    return (ciphertext: string, binding: SecretBinding) => {
      // Keyed by the binding too: a ciphertext copied onto another webhook must not open from cache.
      const key = `${binding.partnerId}\u0000${binding.webhookId}\u0000${ciphertext}`;
      let secret = cache.get(key);
      if (secret === undefined) {
        secret = secrets.open(ciphertext, binding);
        if (cache.size > 10_000) cache.clear();
        cache.set(key, secret);
      }
      return secret;
    };
  })();

  async function send(
    delivery: DeliveryRow,
    webhook: { url: string; secret_ciphertext: string },
    attemptedAt: Date,
  ): Promise<SendResult> {
    let secret: string;
    try {
      secret = openSecret(webhook.secret_ciphertext, {
        partnerId: delivery.partner_id,
        webhookId: delivery.webhook_id,
      });
    } catch {
      // A key mix-up between the API and the relay: record it as a failed attempt, keep retrying.
      return {
        statusCode: null,
        error: 'The webhook secret cannot be decrypted with the relay key (WEBHOOK_ENCRYPTION_KEY)',
        retryAfter: undefined,
        durationMs: 0,
        responseExcerpt: null,
      };
    }
    const headers = {
      'user-agent': 'Leadline-Webhooks/1.0',
      'x-service-delivery-id': delivery.id,
      'x-service-event-type': delivery.event_type,
      ...signatureHeaders(secret, delivery.body, Math.floor(attemptedAt.getTime() / 1000)),
    };
    try {
      return await client.post(webhook.url, headers, delivery.body);
    } catch (error) {
      return {
        statusCode: null,
        error: `The attempt could not be made: ${(error as Error).message}`.slice(0, 500),
        retryAfter: undefined,
        durationMs: 0,
        responseExcerpt: null,
      };
    }
  }

  /** What an answered attempt changes on its delivery row, and what the log must learn of it. */
  function consequence(delivery: DeliveryRow, token: string, attemptedAt: Date, result: SendResult): Outcome {
    const answeredAt = clock.now();
    const outcome = outcomeOf(result.statusCode, parseRetryAfter(result.retryAfter, answeredAt));
    const step = nextStep(outcome, delivery.retries_done, retryDelaysSeconds, answeredAt);
    const attempts = delivery.attempts + 1;
    const row: Outcome['row'] = {
      status: 'pending',
      attempts,
      retries_done: delivery.retries_done,
      next_attempt_at: null,
      completed_at: answeredAt,
      last_status_code: result.statusCode,
      last_error: result.error,
    };
    let outbox: OutboxEvent | undefined;
    const base = { partner_id: delivery.partner_id, correlation_id: delivery.event_id };
    switch (step.kind) {
      case 'succeeded':
        row.status = 'succeeded';
        break;
      case 'gone':
        row.status = 'failed';
        outbox = {
          ...base,
          id: `disabled:${delivery.id}`,
          event: {
            type: 'webhook.disabled',
            data: {
              webhook_id: delivery.webhook_id,
              reason: 'gone',
              delivery_id: delivery.id,
              status_code: 410,
            },
          },
        };
        break;
      case 'exhausted':
        row.status = 'failed';
        outbox = {
          ...base,
          id: `delivery_failed:${delivery.id}:${attempts}`,
          event: {
            type: 'webhook.delivery_failed',
            data: {
              webhook_id: delivery.webhook_id,
              delivery_id: delivery.id,
              event_id: delivery.event_id,
              event_type: delivery.event_type,
              account_id: delivery.account_id,
              attempts,
              last_status_code: result.statusCode,
              last_error: result.error,
            },
          },
        };
        break;
      case 'retry':
        Object.assign(row, {
          next_attempt_at: step.at,
          completed_at: null,
          retries_done: delivery.retries_done + 1,
        });
        break;
      default: {
        const unknownStep: never = step;
        throw new Error(`Unknown step ${(unknownStep as { kind: string }).kind}`);
      }
    }
    return {
      delivery,
      token,
      attemptedAt,
      result,
      row,
      outbox,
      dropped: step.kind === 'gone' ? dropQueued(delivery.webhook_id) : [],
    };
  }

  /**
   * Writes outcomes: the attempts log and each delivery's new state in one statement, only where the
   * claim still holds (a lease that ran out was taken over; the other relay's record counts), and in
   * the same transaction the outbox rows and, for a webhook that answered 410, the cancellation of
   * its other pending deliveries.
   */
  async function writeOutcomes(trx: Kysely<Database>, outcomes: Outcome[]): Promise<void> {
    const { rows: kept } = await sql<{ id: string }>`
      with v as (
        select * from unnest(
          ${outcomes.map((o) => o.delivery.id)}::text[], ${outcomes.map((o) => o.token)}::text[],
          ${outcomes.map((o) => o.row.status)}::text[], ${outcomes.map((o) => o.row.attempts)}::int[],
          ${outcomes.map((o) => o.row.retries_done)}::int[],
          ${outcomes.map((o) => o.row.next_attempt_at)}::timestamptz[],
          ${outcomes.map((o) => o.row.completed_at)}::timestamptz[],
          ${outcomes.map((o) => o.row.last_status_code)}::int[], ${outcomes.map((o) => o.row.last_error)}::text[],
          ${outcomes.map((o) => o.attemptedAt)}::timestamptz[], ${outcomes.map((o) => o.result.durationMs)}::int[],
          ${outcomes.map((o) => o.result.responseExcerpt)}::text[]
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
    const follow = outcomes.filter((o) => o.outbox && keptIds.has(o.delivery.id));
    for (const { outbox, delivery, dropped } of follow) {
      await trx
        .insertInto('webhook_relay_outbox')
        .values({
          id: outbox!.id,
          partner_id: outbox!.partner_id,
          correlation_id: outbox!.correlation_id,
          event: JSON.stringify(outbox!.event) as never,
          created_at: clock.now(),
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
      if (outbox!.event.type !== 'webhook.disabled') continue;
      // Its other pending deliveries go nowhere now; one another relay is sending records its answer.
      await sql`
        update webhook_deliveries set status = 'cancelled', next_attempt_at = null,
          completed_at = ${clock.now()}, last_error = 'Webhook disabled by a 410 answer'
        where webhook_id = ${delivery.webhook_id} and status = 'pending'
          and (leased_until is null or leased_until <= ${clock.now()}
               or claim_token = any(${dropped.map((row) => row.claim_token!)}::text[]))`.execute(trx);
    }
  }

  /** Outcomes waiting to be written; whoever finds the writer idle writes every one waiting. */
  const pending: { outcome: Outcome; done: () => void }[] = [];
  let writing = false;
  let outboxDirty = false;

  async function writeWaiting() {
    if (writing) return;
    writing = true;
    try {
      while (pending.length > 0) {
        const batch = pending.splice(0, 200);
        const outcomes = batch.map((entry) => entry.outcome);
        try {
          // Without outbox rows it is one statement: atomic on its own, one round trip.
          if (outcomes.some((outcome) => outcome.outbox)) {
            await db.transaction().execute((trx) => writeOutcomes(trx, outcomes));
          } else {
            await writeOutcomes(db, outcomes);
          }
        } catch (error) {
          // One outcome that cannot be written must not take the others down with it.
          if (batch.length === 1) reportError(error);
          else {
            for (const outcome of outcomes) {
              await db
                .transaction()
                .execute((trx) => writeOutcomes(trx, [outcome]))
                .catch(reportError);
            }
          }
        }
        if (outcomes.some((outcome) => outcome.outbox)) outboxDirty = true;
        for (const entry of batch) entry.done();
      }
    } finally {
      writing = false;
    }
  }

  function record(outcome: Outcome): Promise<void> {
    return new Promise<void>((resolve) => {
      pending.push({ outcome, done: resolve });
      void writeWaiting();
    });
  }

  /** Sends one claimed delivery; resolves when its slot is free, its outcome is recorded apart. */
  async function attempt(claimed: ClaimedRow): Promise<void> {
    const { url, active: _active, secret_ciphertext, ...delivery } = claimed;
    const attemptedAt = clock.now();
    const result = await send(delivery, { url: url!, secret_ciphertext: secret_ciphertext! }, attemptedAt);
    const written: Promise<void> = record(consequence(delivery, delivery.claim_token!, attemptedAt, result))
      .then(async () => {
        attemptsSent += 1;
        if (outboxDirty) await flushOutbox();
      })
      .catch(reportError)
      .finally(() => writes.delete(written));
    writes.add(written);
  }

  /** Disabled or deleted since the event was fanned out: nothing more goes to it. */
  async function cancelOrphans(rows: ClaimedRow[]) {
    if (rows.length === 0) return;
    await sql`
      update webhook_deliveries as d set status = 'cancelled', next_attempt_at = null,
        completed_at = ${clock.now()}, leased_until = null, claim_token = null,
        last_error = case when v.deleted then 'Webhook deleted' else 'Webhook inactive' end
      from unnest(${rows.map((row) => row.id)}::text[], ${rows.map((row) => row.claim_token)}::text[],
                  ${rows.map((row) => row.url === null)}::boolean[]) as v(id, token, deleted)
      where d.id = v.id and d.claim_token = v.token`.execute(db);
  }

  let claiming: Promise<number> | undefined;
  /** Once stopping, nothing more starts; what waits goes back. */
  let stopping = false;
  /** Queued deliveries whose lease ran too short while they waited: handed back by the next fill. */
  const stale: ClaimedRow[] = [];

  function launch(row: ClaimedRow) {
    bump(sendingTo, row.webhook_id, 1);
    const running: Promise<void> = attempt(row)
      .catch(reportError)
      .finally(() => {
        inFlight.delete(running);
        bump(sendingTo, row.webhook_id, -1);
        // The slot goes to the next waiting delivery at once; the loop then claims more.
        startQueued();
        if (loopRunning) setImmediate(wake);
      });
    inFlight.add(running);
  }

  /** Starts waiting deliveries while slots are free, skipping webhooks at their cap. */
  function startQueued(): number {
    let started = 0;
    if (stopping) return started;
    for (let i = 0; i < queue.length && inFlight.size < concurrency;) {
      const row = queue[i]!;
      if ((sendingTo.get(row.webhook_id) ?? 0) >= endpointConcurrency) {
        i += 1;
        continue;
      }
      queue.splice(i, 1);
      bump(queuedFor, row.webhook_id, -1);
      if (new Date(row.leased_until!).getTime() - clock.now().getTime() < attemptTimeoutMs) {
        stale.push(row);
        continue;
      }
      launch(row);
      started += 1;
    }
    return started;
  }

  /** Hands claimed deliveries back (due again at once, for any relay). */
  async function release(rows: ClaimedRow[]) {
    if (rows.length === 0) return;
    await sql`
      update webhook_deliveries as d set leased_until = null, claim_token = null
      from unnest(${rows.map((row) => row.id)}::text[], ${rows.map((row) => row.claim_token)}::text[])
        as v(id, token)
      where d.id = v.id and d.claim_token = v.token`.execute(db);
  }

  /**
   * Starts what waits, then claims until the slots and the queue are full; returns how many started.
   */
  function fill(): Promise<number> {
    if (claiming) return claiming;
    const current = (async () => {
      // Never synchronous to the end, so that `claiming` is cleared only after it was set.
      await Promise.resolve();
      try {
        let started = startQueued();
        for (;;) {
          const room = concurrency + queueLimit - inFlight.size - queue.length;
          // While deliveries still wait here, claim in batches rather than one per ending attempt.
          if (stopping || room <= 0 || (queue.length > 0 && room < Math.ceil(queueLimit / 4))) break;
          const claimed = await claim(room);
          if (claimed.length === 0) break;
          const orphaned = claimed.filter(
            (row) => row.url === null || row.secret_ciphertext === null || !row.active,
          );
          await cancelOrphans(orphaned);
          for (const row of claimed) {
            if (orphaned.includes(row)) continue;
            queue.push(row);
            bump(queuedFor, row.webhook_id, 1);
          }
          started += startQueued();
        }
        await release(stale.splice(0));
        return started;
      } finally {
        claiming = undefined;
      }
    })();
    claiming = current;
    return current;
  }

  /** A webhook that answered 410: what this relay holds of it in its queue goes nowhere. */
  function dropQueued(webhookId: string): ClaimedRow[] {
    const dropped = queue.filter((row) => row.webhook_id === webhookId);
    for (const row of dropped) {
      queue.splice(queue.indexOf(row), 1);
      bump(queuedFor, row.webhook_id, -1);
    }
    return dropped;
  }

  /** Puts the outbox's facts on the log, oldest first; a fact whose append fails stays for the next pass. */
  async function flushOutbox(): Promise<void> {
    outboxDirty = false;
    for (;;) {
      const now = clock.now();
      const { rows } = await sql<Selectable<Database['webhook_relay_outbox']>>`
        update webhook_relay_outbox o set leased_until = ${new Date(now.getTime() + leaseMs)}
        from (
          select id from webhook_relay_outbox
          where appended_at is null and (leased_until is null or leased_until <= ${now})
          order by created_at limit 20
          for update skip locked
        ) p
        where o.id = p.id
        returning o.*`.execute(db);
      if (rows.length === 0) return;
      for (const row of rows) {
        const event = row.event as OutboxEvent['event'];
        await commands
          .append({
            stream: { topic: 'partner' },
            context: {
              partnerId: row.partner_id,
              actor: { kind: 'system', service: 'webhook-relay' },
              correlationId: row.correlation_id,
              causationId: row.correlation_id,
            },
            events: [event],
          })
          .catch(async (error: unknown) => {
            // Back to the queue at once: the next pass, here or in another relay, tries again.
            await db
              .updateTable('webhook_relay_outbox')
              .set({ leased_until: null })
              .where('id', '=', row.id)
              .execute();
            throw error;
          });
        await db
          .updateTable('webhook_relay_outbox')
          .set({ appended_at: clock.now(), leased_until: null })
          .where('id', '=', row.id)
          .execute();
      }
    }
  }

  let backfillWanted = true;
  let lastPrune = 0;

  async function housekeeping() {
    if (backfillWanted) {
      backfillWanted = false;
      try {
        await backfillNewWebhooks(db, clock);
      } catch (error) {
        backfillWanted = true;
        throw error;
      }
    }
    const now = clock.now().getTime();
    if (now - lastPrune > 3600_000) {
      lastPrune = now;
      await pruneRelayedEvents(db, new Date(now - backfillWindowMs));
    }
  }

  async function drain(): Promise<number> {
    const before = attemptsSent;
    backfillWanted = true;
    await housekeeping();
    await flushOutbox();
    for (;;) {
      const started = await fill();
      if (started === 0 && inFlight.size === 0 && queue.length === 0) {
        if (writes.size === 0) break;
        await Promise.allSettled([...writes]);
        continue;
      }
      if (inFlight.size > 0) await Promise.race(inFlight);
    }
    await flushOutbox();
    return attemptsSent - before;
  }

  let loopRunning = false;
  let loop: Promise<void> | undefined;
  let unwatchQueue: (() => void) | undefined;
  let wakeUp: (() => void) | undefined;
  let wakeRequested = false;

  function wake() {
    wakeRequested = true;
    wakeUp?.();
  }

  /** How long the loop may sleep: until the next delivery falls due or a lease runs out. */
  async function idleFor(): Promise<number> {
    const next = await sql<{ at: Date | null }>`
      select min(greatest(next_attempt_at, leased_until)) as at
      from webhook_deliveries where status = 'pending'`.execute(db);
    const at = next.rows[0]?.at;
    if (!at) return pollIntervalMs;
    const dueIn = new Date(at).getTime() - clock.now().getTime();
    // Due but not claimable: leased by another relay, whose record frees it; look again shortly.
    if (dueIn <= 0) return Math.min(200, pollIntervalMs);
    return Math.min(pollIntervalMs, dueIn);
  }

  async function pass() {
    await housekeeping();
    if (outboxDirty) await flushOutbox();
    await fill();
    if (wakeRequested) return;
    // While attempts are under way, each one's end wakes the loop; the next due time matters only
    // once nothing is.
    const wait = inFlight.size > 0 ? pollIntervalMs : await idleFor();
    if (wakeRequested) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        // The safety poll also looks for webhooks projected without a notification reaching us.
        backfillWanted = true;
        outboxDirty = true;
        resolve();
      }, wait);
      wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    wakeUp = undefined;
  }

  return {
    drain,
    start() {
      if (loopRunning) return;
      loopRunning = true;
      outboxDirty = true;
      unwatchQueue = watchQueue('webhook_deliveries', async () => {
        const now = deps.clock.now();
        const { rows } = await sql<{ depth: string; lateness: number | null }>`
          select count(*)::text as depth,
                 extract(epoch from ${now}::timestamptz
                   - min(next_attempt_at) filter (where next_attempt_at <= ${now}))::float8 as lateness
          from webhook_deliveries where status = 'pending'`.execute(deps.db);
        return { depth: Number(rows[0]?.depth ?? 0), latenessSeconds: rows[0]?.lateness ?? 0 };
      });
      loop = (async () => {
        while (loopRunning) {
          wakeRequested = false;
          try {
            await pass();
          } catch (error) {
            reportError(error);
            await new Promise((resolve) => setTimeout(resolve, Math.min(1000, pollIntervalMs)));
          }
        }
      })();
    },
    wake,
    webhooksChanged() {
      backfillWanted = true;
      wake();
    },
    async stop() {
      stopping = true;
      loopRunning = false;
      unwatchQueue?.();
      wakeUp?.();
      await loop;
      // Attempts under way finish and are recorded: stopping sends nothing twice.
      await claiming?.catch(() => undefined);
      // What waited goes back at once: another relay need not wait for the leases to run out.
      const waiting = queue.splice(0);
      queuedFor.clear();
      await release(waiting).catch(reportError);
      await Promise.allSettled([...inFlight]);
      await Promise.allSettled([...writes]);
    },
  };
}

/** The channel the deliveries table's trigger notifies when deliveries are queued or re-queued. */
export const DELIVERIES_CHANNEL = 'leadline_webhook_deliveries';

/**
 * Calls `onQueued` on every notification of queued deliveries, over one dedicated connection that is
 * re-opened after a failure (the dispatcher's safety poll covers what is missed meanwhile). Returns
 * the way to stop.
 */
export async function listenForDeliveries(pool: pg.Pool, onQueued: () => void): Promise<() => Promise<void>> {
  let client: pg.PoolClient | undefined;
  let closed = false;
  const listen = async () => {
    const connection = await pool.connect();
    client = connection;
    connection.on('notification', () => onQueued());
    connection.on('error', () => {
      connection.release(true);
      if (client === connection) client = undefined;
      if (!closed) setTimeout(() => void listen().catch(() => undefined), 1000);
    });
    await connection.query(`listen ${DELIVERIES_CHANNEL}`);
    // Whatever was queued while nobody listened.
    onQueued();
  };
  await listen();
  return async () => {
    closed = true;
    const connection = client;
    client = undefined;
    if (!connection) return;
    await connection.query(`unlisten ${DELIVERIES_CHANNEL}`).catch(() => undefined);
    connection.release();
  };
}
