import type { Database, Failure, FairnessPolicy, Settlement, WebhookDeliveryStatus } from '@leadline/runtime';
import type { Selectable } from 'kysely';
import type { SendResult } from './http-client';
import { parseRetryAfter } from './schedule';

/**
 * The relay's decisions about deliveries, as pure functions of their inputs: what an attempt's answer
 * means, what it changes on the delivery and what the log must learn of it, how the slots are shared
 * between endpoints, and how long an attempt may hold one. The dispatcher's shell runs them.
 */

export type DeliveryRow = Selectable<Database['webhook_deliveries']>;
/** A leased delivery, with its webhook as the claim read it (null: deleted since the fan-out). */
export type ClaimedRow = DeliveryRow & {
  url: string | null;
  active: boolean | null;
  secret_ciphertext: string | null;
};

/** One attempt: when it was made (its signature's timestamp) and what the receiver answered. */
export interface Attempt {
  attemptedAt: Date;
  result: SendResult;
}

/** A fact the relay decided and must put on the partner topic, kept in its outbox until it is. */
export interface OutboxEvent {
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

/** A delivery's row after an attempt. */
export interface DeliveryChange {
  status: WebhookDeliveryStatus;
  attempts: number;
  retries_done: number;
  next_attempt_at: Date | null;
  completed_at: Date | null;
  last_status_code: number | null;
  last_error: string | null;
}

/**
 * What an answer means for the retry policy: a 2xx is done (undefined), a 410 Gone is final, anything
 * else (another status, no answer at all) is retried, no sooner than the receiver's `Retry-After`.
 */
export function attemptFailure({ result }: Attempt, now: Date): Failure | undefined {
  const status = result.statusCode;
  if (status !== null && status >= 200 && status < 300) return undefined;
  if (status === 410) return { error: result.error, retryable: false };
  const retryAfter = parseRetryAfter(result.retryAfter, now);
  return { error: result.error, notBeforeMs: retryAfter === null ? null : retryAfter * 1000 };
}

/** An attempt that threw rather than answered (it should not): recorded as a failed attempt. */
const unanswered = (error: unknown): SendResult => ({
  statusCode: null,
  error: `The attempt failed: ${error instanceof Error ? error.message : String(error)}`.slice(0, 500),
  retryAfter: undefined,
  durationMs: 0,
  responseExcerpt: null,
});

/**
 * What a settled attempt changes on its delivery row, and the fact the log must learn of it: a success;
 * a 410, which fails the delivery and disables the webhook; the schedule's end, which fails it and
 * reports `webhook.delivery_failed`; or the next retry.
 */
export function consequence(
  delivery: DeliveryRow,
  settlement: Settlement<Attempt>,
  answeredAt: Date,
): { row: DeliveryChange; result: SendResult; outbox: OutboxEvent | undefined } {
  const result =
    settlement.result?.result ?? unanswered(settlement.kind === 'done' ? null : settlement.error);
  const attempts = delivery.attempts + 1;
  const row: DeliveryChange = {
    status: 'failed',
    attempts,
    retries_done: delivery.retries_done,
    next_attempt_at: null,
    completed_at: answeredAt,
    last_status_code: result.statusCode,
    last_error: result.error,
  };
  const base = { partner_id: delivery.partner_id, correlation_id: delivery.event_id };
  switch (settlement.kind) {
    case 'done':
      return { row: { ...row, status: 'succeeded' }, result, outbox: undefined };
    case 'retry':
      return {
        row: {
          ...row,
          status: 'pending',
          next_attempt_at: settlement.at,
          completed_at: null,
          retries_done: delivery.retries_done + 1,
        },
        result,
        outbox: undefined,
      };
    case 'not_retryable': {
      const data = { webhook_id: delivery.webhook_id, reason: 'gone' as const, delivery_id: delivery.id };
      return {
        row,
        result,
        outbox: {
          ...base,
          id: `disabled:${delivery.id}`,
          event: { type: 'webhook.disabled', data: { ...data, status_code: 410 } },
        },
      };
    }
    case 'exhausted':
      return {
        row,
        result,
        outbox: {
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
        },
      };
    default: {
      const unknown: never = settlement;
      throw new Error(`Unknown settlement ${(unknown as { kind: string }).kind}`);
    }
  }
}

/**
 * Attempts in flight to one webhook at once: a partner whose endpoint hangs or answers slowly holds at
 * most this many of the relay's slots and delays no other partner.
 */
export const endpointFairness = (perEndpoint: number): FairnessPolicy<ClaimedRow> => ({
  keyOf: (row) => row.webhook_id,
  perKey: Math.max(1, perEndpoint),
});

/**
 * What one webhook may have claimed in one relay at once: its sending slots, plus three times as many
 * waiting (claims run ahead of the slots), so one webhook's backlog never fills a claim.
 */
export const perWebhookClaim = (perEndpoint: number) => 4 * Math.max(1, perEndpoint);

/**
 * How long an attempt may hold its slot: the client's timeout, plus half of what its lease leaves after
 * it (to sign and record). A claimed delivery starts only with this much of its lease left, so it ends
 * or is handed back before another relay can take it.
 */
export const attemptBudgetMs = (attemptTimeoutMs: number, leaseMs: number) =>
  attemptTimeoutMs + Math.max(0, leaseMs - attemptTimeoutMs) / 2;

/** Why a claimed delivery goes nowhere (its webhook was deleted or disabled since the fan-out). */
export function orphanReason(row: ClaimedRow): 'Webhook deleted' | 'Webhook inactive' | undefined {
  if (row.url === null) return 'Webhook deleted';
  if (row.secret_ciphertext === null || !row.active) return 'Webhook inactive';
  return undefined;
}
