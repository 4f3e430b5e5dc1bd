import type pg from 'pg';
import {
  createWorker,
  reportFailure,
  type Clock,
  type CommandBus,
  type Database,
  type SecretBinding,
  type SecretBox,
  type WorkQueue,
} from '@leadline/runtime';
import { sql, type Kysely, type Selectable } from 'kysely';
import {
  cancelOrphans,
  claimDeliveries,
  createOutcomeWriter,
  measureDeliveries,
  nextDelivery,
  releaseDeliveries,
} from './deliveries';
import {
  attemptBudgetMs,
  attemptFailure,
  consequence,
  endpointFairness,
  orphanReason,
  perWebhookClaim,
  type Attempt,
  type ClaimedRow,
  type OutboxEvent,
} from './delivery-policy';
import { backfillNewWebhooks, pruneRelayedEvents } from './fan-out';
import type { SendResult, WebhookClient } from './http-client';
import { deliveryRetryPolicy } from './schedule';
import { signatureHeaders } from './signing';

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
   * The longest one attempt takes (the client's timeout): with the lease it sets the attempt's time
   * budget (see attemptBudgetMs), and a claimed delivery with less than that left of its lease when a
   * slot frees is handed back instead of sent.
   */
  attemptTimeoutMs?: number;
  /** How long stopping waits for attempts under way before it hands them back (5 s by default). */
  drainMs?: number;
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

/**
 * Signs and POSTs one delivery. Never throws: a secret that cannot be opened or an attempt that cannot
 * be made is a failed attempt, recorded and retried like any other.
 */
function sender(deps: Pick<DispatcherDeps, 'client' | 'secrets'>) {
  // Decrypting is cheap but not free; a webhook's ciphertext only changes with the webhook.
  const cache = new Map<string, string>();
  const openSecret = (ciphertext: string, binding: SecretBinding) => {
    // Keyed by the binding too: a ciphertext copied onto another webhook must not open from cache.
    const key = `${binding.partnerId}\u0000${binding.webhookId}\u0000${ciphertext}`;
    let secret = cache.get(key);
    if (secret === undefined) {
      secret = deps.secrets.open(ciphertext, binding);
      if (cache.size > 10_000) cache.clear();
      cache.set(key, secret);
    }
    return secret;
  };
  const failed = (error: string): SendResult => ({
    statusCode: null,
    error,
    retryAfter: undefined,
    durationMs: 0,
    responseExcerpt: null,
  });

  return async (row: ClaimedRow, attemptedAt: Date, signal: AbortSignal): Promise<SendResult> => {
    let secret: string;
    try {
      secret = openSecret(row.secret_ciphertext!, { partnerId: row.partner_id, webhookId: row.webhook_id });
    } catch {
      // A key mix-up between the API and the relay: record it as a failed attempt, keep retrying.
      return failed('The webhook secret cannot be decrypted with the relay key (WEBHOOK_ENCRYPTION_KEY)');
    }
    const headers = {
      'user-agent': 'Leadline-Webhooks/1.0',
      'x-service-delivery-id': row.id,
      'x-service-event-type': row.event_type,
      ...signatureHeaders(secret, row.body, Math.floor(attemptedAt.getTime() / 1000)),
    };
    try {
      return await deps.client.post(row.url!, headers, row.body, signal);
    } catch (error) {
      return failed(`The attempt could not be made: ${(error as Error).message}`.slice(0, 500));
    }
  };
}

/** Puts the outbox's facts on the log, oldest first; a fact whose append fails stays for the next pass. */
async function flushOutbox(deps: Pick<DispatcherDeps, 'db' | 'clock' | 'commands'>, leaseMs: number) {
  const { db, clock, commands } = deps;
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

/**
 * Sends due deliveries on the runtime's worker, without holding a transaction or a row lock across a
 * partner's endpoint:
 *   1. claim: one statement leases a few due deliveries (fairly across webhooks, at most four times
 *      `endpointConcurrency` leased per webhook) and commits;
 *   2. send: each POST runs outside any transaction, bounded by the client's timeout and by the
 *      attempt's time budget, at most `endpointConcurrency` at once per webhook;
 *   3. record: each outcome is written in a short transaction of its own (outcomes finishing together
 *      share one, and fall back to one each if that fails), only under the claim that sent it.
 * A relay that dies between 1 and 3 leaves leases that run out; the deliveries are then sent again
 * under the same delivery id: at-least-once, for the receiver to dedupe on.
 */
export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const { db, clock } = deps;
  const concurrency = Math.max(1, deps.concurrency);
  const endpointConcurrency = Math.max(1, deps.endpointConcurrency ?? 2);
  const leaseMs = deps.leaseMs ?? 60_000;
  const attemptTimeoutMs = Math.min(deps.attemptTimeoutMs ?? leaseMs / 2, leaseMs);
  const backfillWindowMs = deps.backfillWindowMs ?? 24 * 3600 * 1000;
  const reportError = deps.onError ?? reportFailure('webhook-relay: dispatch');
  const send = sender(deps);

  let outboxDirty = true;
  const flush = async () => {
    outboxDirty = false;
    await flushOutbox(deps, leaseMs);
  };
  const record = createOutcomeWriter({
    db,
    clock,
    onError: reportError,
    written: (withOutbox) => void (withOutbox && (outboxDirty = true)),
  });

  const queue: WorkQueue<ClaimedRow, Attempt> = {
    name: 'webhook_deliveries',
    async claim(request) {
      const claimed = await claimDeliveries(
        db,
        clock.now(),
        leaseMs,
        perWebhookClaim(endpointConcurrency),
        request,
      );
      const orphans = claimed.filter((row) => orphanReason(row) !== undefined);
      await cancelOrphans(db, orphans, clock.now());
      return claimed.filter((row) => !orphans.includes(row));
    },
    async run(row, signal) {
      const attemptedAt = clock.now();
      return { attemptedAt, result: await send(row, attemptedAt, signal) };
    },
    failureOf: attemptFailure,
    history: (row) => ({ retriesDone: row.retries_done }),
    async settle(claimed, settlement) {
      const { url: _url, active: _active, secret_ciphertext: _secret, ...delivery } = claimed;
      const decided = consequence(delivery, settlement, clock.now());
      // A 410: what this relay holds of the webhook and has not started goes nowhere either.
      const dropped =
        settlement.kind === 'not_retryable'
          ? worker.withdraw((row) => row.webhook_id === claimed.webhook_id)
          : [];
      const attemptedAt = settlement.result?.attemptedAt ?? clock.now();
      await record({
        delivery,
        token: claimed.claim_token!,
        attempt: { attemptedAt, result: decided.result },
        row: decided.row,
        outbox: decided.outbox,
        dropped,
      });
      if (outboxDirty) await flush().catch(reportError);
    },
    release: (rows, until) => releaseDeliveries(db, rows, until),
    leaseEndOf: (row) => new Date(row.leased_until!),
    nextDue: () => nextDelivery(db),
    measure: () => measureDeliveries(db, clock.now()),
  };

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

  const worker = createWorker({
    queue,
    clock,
    concurrency,
    // Claimed ahead of free slots, so an ending attempt's slot is taken without a round trip: three
    // times the slots, since one claim (a round trip and a commit) lasts as long as several attempts on
    // a busy machine, and a queue shorter than what ends meanwhile leaves slots idle while it runs.
    prefetch: 3 * concurrency,
    fairness: endpointFairness(endpointConcurrency),
    retry: deliveryRetryPolicy(deps.retryDelaysSeconds),
    budgetMs: attemptBudgetMs(attemptTimeoutMs, leaseMs),
    drainMs: deps.drainMs ?? 5000,
    pollMs: deps.pollIntervalMs ?? 5000,
    onError: reportError,
    async beforePass(reason) {
      // The safety poll also looks for webhooks projected without a notification reaching us.
      if (reason === 'poll') {
        backfillWanted = true;
        outboxDirty = true;
      }
      await housekeeping();
      if (outboxDirty) await flush();
    },
  });

  return {
    async drain() {
      backfillWanted = true;
      await housekeeping();
      await flush();
      const sent = await worker.drain();
      await flush();
      return sent;
    },
    start: () => worker.start(),
    wake: () => worker.wake(),
    webhooksChanged() {
      backfillWanted = true;
      worker.wake();
    },
    // Attempts under way get `drainMs` to finish and be recorded; the rest go back to the queue.
    stop: () => worker.stop(),
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
