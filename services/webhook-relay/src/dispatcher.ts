import {
  watchQueue,
  type Clock,
  type CommandBus,
  type Database,
  type SecretBinding,
  type SecretBox,
  type WebhookDeliveryStatus,
} from '@leadline/runtime';
import { sql, type Kysely, type Selectable, type Transaction } from 'kysely';
import type { SendResult, WebhookClient } from './http-client';
import { nextStep, parseRetryAfter, type AttemptOutcome } from './schedule';
import { signatureHeaders } from './signing';

type DeliveryRow = Selectable<Database['webhook_deliveries']>;

export interface DispatcherDeps {
  db: Kysely<Database>;
  clock: Clock;
  client: WebhookClient;
  secrets: SecretBox;
  retryDelaysSeconds: readonly number[];
  /** Attempts in flight at once. */
  concurrency: number;
  /**
   * Deliveries one transaction claims, sends concurrently and records together (default 4); the
   * concurrency is spread over ceil(concurrency / batchSize) workers, one database connection each.
   */
  batchSize?: number;
  /** Appends webhook.disabled and webhook.delivery_failed to the partner topic. */
  commands: Pick<CommandBus, 'append'>;
  /** Longest idle wait between looks for due deliveries when nothing wakes the loop. */
  pollIntervalMs?: number;
  onError?: (error: unknown) => void;
}

export interface Dispatcher {
  /** Sends every attempt due at the clock's now, until none is left; returns how many were sent. */
  drain(): Promise<number>;
  /** Runs `drain` in a loop: on `wake`, when the next attempt falls due, and every poll interval. */
  start(): void;
  wake(): void;
  stop(): Promise<void>;
}

type Aftermath =
  | { kind: 'disabled'; delivery: DeliveryRow; statusCode: number }
  | {
      kind: 'exhausted';
      delivery: DeliveryRow;
      attempts: number;
      statusCode: number | null;
      error: string | null;
    }
  | undefined;

const outcomeOf = (statusCode: number | null, retryAfter: number | null): AttemptOutcome => {
  if (statusCode !== null && statusCode >= 200 && statusCode < 300) return { kind: 'succeeded' };
  if (statusCode === 410) return { kind: 'gone' };
  return { kind: 'failed', retryAfterSeconds: retryAfter };
};

/**
 * Sends due deliveries. Each attempt claims its row with FOR UPDATE SKIP LOCKED and holds the lock in
 * its transaction while it sends and records the answer (a worker does this for a few rows at once,
 * to spend fewer round trips per delivery), so two relays never send the same attempt,
 * and an attempt cut short by a crash (lock released, nothing recorded) is simply sent again by
 * whichever relay looks next: at-least-once, with the same delivery id for the receiver to dedupe on.
 */
export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const { db, clock, client, secrets, retryDelaysSeconds, commands } = deps;
  const pollIntervalMs = deps.pollIntervalMs ?? 1000;
  const batchSize = Math.max(1, Math.min(deps.batchSize ?? 4, deps.concurrency));
  const workers = Math.ceil(deps.concurrency / batchSize);
  const reportError = deps.onError ?? ((error) => console.error('webhook-relay: dispatch failed', error));

  /** The oldest due deliveries nobody else holds, locked for this transaction, with their webhooks. */
  async function claim(trx: Transaction<Database>, now: Date) {
    return trx
      .selectFrom('webhook_deliveries as d')
      .leftJoin('webhooks as w', 'w.id', 'd.webhook_id')
      .selectAll('d')
      .select(['w.url', 'w.active', 'w.secret_ciphertext'])
      .where('d.status', '=', 'pending')
      .where('d.next_attempt_at', '<=', now)
      .orderBy('d.next_attempt_at')
      .limit(batchSize)
      .forUpdate('d')
      .skipLocked()
      .execute();
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
    return client.post(webhook.url, headers, delivery.body);
  }

  /** What an answered attempt changes on its delivery row. */
  function consequence(delivery: DeliveryRow, result: SendResult, answeredAt: Date) {
    const outcome = outcomeOf(result.statusCode, parseRetryAfter(result.retryAfter, answeredAt));
    const step = nextStep(outcome, delivery.retries_done, retryDelaysSeconds, answeredAt);
    const attempts = delivery.attempts + 1;
    const row = {
      id: delivery.id,
      status: 'pending' as WebhookDeliveryStatus,
      attempts,
      retries_done: delivery.retries_done,
      next_attempt_at: null as Date | null,
      completed_at: answeredAt as Date | null,
      last_status_code: result.statusCode,
      last_error: result.error,
    };
    let aftermath: Aftermath;
    switch (step.kind) {
      case 'succeeded':
        row.status = 'succeeded';
        break;
      case 'gone':
        row.status = 'failed';
        aftermath = { kind: 'disabled', delivery, statusCode: 410 };
        break;
      case 'exhausted':
        row.status = 'failed';
        aftermath = {
          kind: 'exhausted',
          delivery,
          attempts,
          statusCode: result.statusCode,
          error: result.error,
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
    return { row, aftermath };
  }

  /**
   * One attempt of each of a few due deliveries, in one transaction: claimed together, sent
   * concurrently, recorded with one insert and one update. Undefined when nothing was due.
   */
  async function attemptBatch(): Promise<{ sent: number; aftermaths: Aftermath[] } | undefined> {
    return db.transaction().execute(async (trx) => {
      const claimed = await claim(trx, clock.now());
      if (claimed.length === 0) return undefined;

      // Disabled or deleted since the event was fanned out: nothing more goes to it.
      const orphaned = claimed.filter(
        (row) => row.url === null || row.secret_ciphertext === null || !row.active,
      );
      for (const row of orphaned) {
        await trx
          .updateTable('webhook_deliveries')
          .set({
            status: 'cancelled',
            next_attempt_at: null,
            completed_at: clock.now(),
            last_error: row.url === null ? 'Webhook deleted' : 'Webhook inactive',
          })
          .where('id', '=', row.id)
          .execute();
      }

      const attempts = await Promise.all(
        claimed
          .filter((row) => !orphaned.includes(row))
          .map(async ({ url, active: _active, secret_ciphertext, ...delivery }) => {
            const attemptedAt = clock.now();
            const result = await send(
              delivery,
              { url: url!, secret_ciphertext: secret_ciphertext! },
              attemptedAt,
            );
            return { delivery, attemptedAt, result, ...consequence(delivery, result, clock.now()) };
          }),
      );
      if (attempts.length === 0) return { sent: 0, aftermaths: [] };

      await trx
        .insertInto('webhook_delivery_attempts')
        .values(
          attempts.map(({ delivery, attemptedAt, result, row }) => ({
            delivery_id: delivery.id,
            attempt: row.attempts,
            attempted_at: attemptedAt,
            status_code: result.statusCode,
            error: result.error,
            duration_ms: result.durationMs,
            response_excerpt: result.responseExcerpt,
          })),
        )
        .execute();
      // The attempts and their consequences commit together: the log and the schedule never disagree.
      const rows = attempts.map(({ row }) => row);
      await sql`
        update webhook_deliveries as d set
          status = v.status, attempts = v.attempts, retries_done = v.retries_done,
          next_attempt_at = v.next_attempt_at, completed_at = v.completed_at,
          last_status_code = v.last_status_code, last_error = v.last_error
        from unnest(
          ${rows.map((row) => row.id)}::text[], ${rows.map((row) => row.status)}::text[],
          ${rows.map((row) => row.attempts)}::int[], ${rows.map((row) => row.retries_done)}::int[],
          ${rows.map((row) => row.next_attempt_at)}::timestamptz[], ${rows.map((row) => row.completed_at)}::timestamptz[],
          ${rows.map((row) => row.last_status_code)}::int[], ${rows.map((row) => row.last_error)}::text[]
        ) as v(id, status, attempts, retries_done, next_attempt_at, completed_at, last_status_code, last_error)
        where d.id = v.id`.execute(trx);

      for (const { aftermath } of attempts) {
        if (aftermath?.kind !== 'disabled') continue;
        // Its other pending deliveries go nowhere now; rows another relay is sending are skipped.
        await sql`
          update webhook_deliveries set status = 'cancelled', next_attempt_at = null,
            completed_at = ${clock.now()}, last_error = 'Webhook disabled by a 410 answer'
          where id in (
            select id from webhook_deliveries
            where webhook_id = ${aftermath.delivery.webhook_id} and status = 'pending'
              and id <> all(${rows.map((row) => row.id)}::text[])
            for update skip locked
          )`.execute(trx);
      }
      return { sent: attempts.length, aftermaths: attempts.map(({ aftermath }) => aftermath) };
    });
  }

  /** After the commit: the log learns what the relay decided (plain facts, no decision reads them). */
  async function record(aftermath: Aftermath) {
    if (!aftermath) return;
    const { delivery } = aftermath;
    const context = {
      partnerId: delivery.partner_id,
      actor: { kind: 'system' as const, service: 'webhook-relay' },
      correlationId: delivery.event_id,
      causationId: delivery.event_id,
    };
    if (aftermath.kind === 'disabled') {
      await commands.append({
        stream: { topic: 'partner' },
        context,
        events: [
          {
            type: 'webhook.disabled',
            data: {
              webhook_id: delivery.webhook_id,
              reason: 'gone',
              delivery_id: delivery.id,
              status_code: aftermath.statusCode,
            },
          },
        ],
      });
    } else {
      await commands.append({
        stream: { topic: 'partner' },
        context,
        events: [
          {
            type: 'webhook.delivery_failed',
            data: {
              webhook_id: delivery.webhook_id,
              delivery_id: delivery.id,
              event_id: delivery.event_id,
              event_type: delivery.event_type,
              account_id: delivery.account_id,
              attempts: aftermath.attempts,
              last_status_code: aftermath.statusCode,
              last_error: aftermath.error,
            },
          },
        ],
      });
    }
  }

  async function drain(): Promise<number> {
    let sent = 0;
    await Promise.all(
      Array.from({ length: workers }, async () => {
        for (;;) {
          const batch = await attemptBatch();
          if (!batch) return;
          sent += batch.sent;
          for (const aftermath of batch.aftermaths) await record(aftermath);
        }
      }),
    );
    return sent;
  }

  let running = false;
  let loop: Promise<void> | undefined;
  let unwatchQueue: (() => void) | undefined;
  let wakeUp: (() => void) | undefined;
  let wakeRequested = false;

  async function untilNextDue(sentAny: boolean): Promise<void> {
    const next = await db
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.min('next_attempt_at').as('at'))
      .where('status', '=', 'pending')
      .executeTakeFirst();
    const dueIn = next?.at ? new Date(next.at).getTime() - clock.now().getTime() : pollIntervalMs;
    // Due rows that this drain did not send are being sent by another relay: look again shortly.
    const wait = Math.max(sentAny ? 0 : Math.min(100, pollIntervalMs), Math.min(pollIntervalMs, dueIn));
    if (wakeRequested || wait === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, wait);
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
      if (running) return;
      running = true;
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
        while (running) {
          wakeRequested = false;
          try {
            await untilNextDue((await drain()) > 0);
          } catch (error) {
            reportError(error);
            await new Promise((resolve) => setTimeout(resolve, pollIntervalMs));
          }
        }
      })();
    },
    wake() {
      wakeRequested = true;
      wakeUp?.();
    },
    async stop() {
      running = false;
      unwatchQueue?.();
      wakeUp?.();
      await loop;
    },
  };
}
