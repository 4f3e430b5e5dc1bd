import type { Clock, CommandBus, Database, SecretBox } from '@leadline/runtime';
import { sql, type Kysely, type Selectable, type Transaction, type Updateable } from 'kysely';
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
  /** Attempts in flight at once; each holds one database connection while it sends. */
  concurrency: number;
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
 * its transaction while it sends and records the answer, so two relays never send the same attempt,
 * and an attempt cut short by a crash (lock released, nothing recorded) is simply sent again by
 * whichever relay looks next: at-least-once, with the same delivery id for the receiver to dedupe on.
 */
export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const { db, clock, client, secrets, retryDelaysSeconds, commands } = deps;
  const pollIntervalMs = deps.pollIntervalMs ?? 1000;
  const reportError = deps.onError ?? ((error) => console.error('webhook-relay: dispatch failed', error));

  /** The oldest due delivery nobody else holds, locked for this transaction, with its webhook. */
  async function claim(trx: Transaction<Database>, now: Date) {
    return trx
      .selectFrom('webhook_deliveries as d')
      .leftJoin('webhooks as w', 'w.id', 'd.webhook_id')
      .selectAll('d')
      .select(['w.url', 'w.active', 'w.secret_ciphertext'])
      .where('d.status', '=', 'pending')
      .where('d.next_attempt_at', '<=', now)
      .orderBy('d.next_attempt_at')
      .limit(1)
      .forUpdate('d')
      .skipLocked()
      .executeTakeFirst();
  }

  const openSecret = (() => {
    // Decrypting is cheap but not free; a webhook's ciphertext only changes with the webhook.
    const cache = new Map<string, string>();
    return (ciphertext: string) => {
      let secret = cache.get(ciphertext);
      if (secret === undefined) {
        secret = secrets.open(ciphertext);
        if (cache.size > 10_000) cache.clear();
        cache.set(ciphertext, secret);
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
      secret = openSecret(webhook.secret_ciphertext);
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

  /** One attempt of one due delivery, in one transaction; undefined when nothing was due. */
  async function attemptOne(): Promise<{ sent: boolean; aftermath: Aftermath } | undefined> {
    return db.transaction().execute(async (trx) => {
      const claimed = await claim(trx, clock.now());
      if (!claimed) return undefined;
      const { url, active, secret_ciphertext, ...delivery } = claimed;
      // Disabled or deleted since the event was fanned out: nothing more goes to it.
      if (url === null || secret_ciphertext === null || !active) {
        await trx
          .updateTable('webhook_deliveries')
          .set({
            status: 'cancelled',
            next_attempt_at: null,
            completed_at: clock.now(),
            last_error: url === null ? 'Webhook deleted' : 'Webhook inactive',
          })
          .where('id', '=', delivery.id)
          .execute();
        return { sent: false, aftermath: undefined };
      }

      const attemptedAt = clock.now();
      const result = await send(delivery, { url, secret_ciphertext }, attemptedAt);
      const answeredAt = clock.now();
      const attempt = delivery.attempts + 1;
      const outcome = outcomeOf(result.statusCode, parseRetryAfter(result.retryAfter, answeredAt));
      const step = nextStep(outcome, delivery.retries_done, retryDelaysSeconds, answeredAt);
      const final = { next_attempt_at: null, completed_at: answeredAt };
      const changes: Updateable<Database['webhook_deliveries']> =
        step.kind === 'succeeded'
          ? { status: 'succeeded', ...final }
          : step.kind === 'gone'
            ? { status: 'failed', ...final }
            : step.kind === 'exhausted'
              ? { status: 'failed', ...final }
              : { next_attempt_at: step.at, retries_done: delivery.retries_done + 1 };

      // The attempt and its consequence in one statement: the log entry and the schedule move together.
      await trx
        .with('recorded', (cte) =>
          cte.insertInto('webhook_delivery_attempts').values({
            delivery_id: delivery.id,
            attempt,
            attempted_at: attemptedAt,
            status_code: result.statusCode,
            error: result.error,
            duration_ms: result.durationMs,
            response_excerpt: result.responseExcerpt,
          }),
        )
        .updateTable('webhook_deliveries')
        .set({ ...changes, attempts: attempt, last_status_code: result.statusCode, last_error: result.error })
        .where('id', '=', delivery.id)
        .execute();

      switch (step.kind) {
        case 'succeeded':
        case 'retry':
          return { sent: true, aftermath: undefined };
        case 'gone':
          // Its other pending deliveries go nowhere now; rows another relay is sending are skipped.
          await sql`
            update webhook_deliveries set status = 'cancelled', next_attempt_at = null,
              completed_at = ${answeredAt}, last_error = 'Webhook disabled by a 410 answer'
            where id in (
              select id from webhook_deliveries
              where webhook_id = ${delivery.webhook_id} and status = 'pending' and id <> ${delivery.id}
              for update skip locked
            )`.execute(trx);
          return { sent: true, aftermath: { kind: 'disabled', delivery, statusCode: 410 } };
        case 'exhausted':
          return {
            sent: true,
            aftermath: {
              kind: 'exhausted',
              delivery,
              attempts: attempt,
              statusCode: result.statusCode,
              error: result.error,
            },
          };
        default: {
          const unknownStep: never = step;
          throw new Error(`Unknown step ${(unknownStep as { kind: string }).kind}`);
        }
      }
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
      Array.from({ length: deps.concurrency }, async () => {
        for (;;) {
          const attempt = await attemptOne();
          if (!attempt) return;
          if (attempt.sent) sent++;
          await record(attempt.aftermath);
        }
      }),
    );
    return sent;
  }

  let running = false;
  let loop: Promise<void> | undefined;
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
      wakeUp?.();
      await loop;
    },
  };
}
