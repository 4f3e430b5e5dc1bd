import { nextAttempt, pickStartable, type Settlement } from '@leadline/runtime';
import { describe, expect, it } from 'vitest';
import {
  attemptBudgetMs,
  attemptFailure,
  consequence,
  endpointFairness,
  orphanReason,
  type Attempt,
  type ClaimedRow,
  type DeliveryRow,
} from './delivery-policy';
import type { SendResult } from './http-client';
import { DEFAULT_RETRY_DELAYS_SECONDS, deliveryRetryPolicy } from './schedule';

const now = new Date('2026-03-08T10:00:00.000Z');
const later = (ms: number) => new Date(now.getTime() + ms);

const delivery = (fields: Partial<DeliveryRow> = {}): DeliveryRow => ({
  id: 'delivery-1',
  webhook_id: 'webhook-1',
  partner_id: 'partner-1',
  account_id: 'account-1',
  event_id: 'event-1',
  event_type: 'lead.created',
  body: '{}',
  status: 'pending',
  attempts: 0,
  retries_done: 0,
  next_attempt_at: now,
  last_status_code: null,
  last_error: null,
  created_at: now,
  completed_at: null,
  leased_until: later(60_000),
  claim_token: 'token-1',
  ...fields,
});

const answer = (statusCode: number | null, fields: Partial<SendResult> = {}): Attempt => ({
  attemptedAt: now,
  result: {
    statusCode,
    error: statusCode !== null && statusCode < 300 ? null : `HTTP ${statusCode}`,
    retryAfter: undefined,
    durationMs: 12,
    responseExcerpt: null,
    ...fields,
  },
});

/** The settlement the worker reaches for an attempt, by the relay's own policy. */
function settle(row: DeliveryRow, attempt: Attempt): Settlement<Attempt> {
  const failure = attemptFailure(attempt, now);
  if (!failure) return { kind: 'done', result: attempt };
  const decision = nextAttempt(
    deliveryRetryPolicy(DEFAULT_RETRY_DELAYS_SECONDS),
    { ...failure, retriesDone: row.retries_done },
    now,
  );
  return decision.kind === 'retry'
    ? { kind: 'retry', at: decision.at, error: failure.error, result: attempt }
    : { kind: decision.kind, error: failure.error, result: attempt };
}

describe("an attempt's consequence", () => {
  it('a 2xx succeeds the delivery', () => {
    const row = delivery();
    const { row: change, outbox } = consequence(row, settle(row, answer(204)), now);
    expect(change).toMatchObject({
      status: 'succeeded',
      attempts: 1,
      completed_at: now,
      last_status_code: 204,
    });
    expect(outbox).toBeUndefined();
  });

  it('a failure is retried on the schedule, exactly (no jitter), and honours a longer Retry-After', () => {
    const first = delivery();
    expect(consequence(first, settle(first, answer(500)), now).row).toEqual({
      status: 'pending',
      attempts: 1,
      retries_done: 1,
      next_attempt_at: later(30_000),
      completed_at: null,
      last_status_code: 500,
      last_error: 'HTTP 500',
    });
    const third = delivery({ attempts: 2, retries_done: 2 });
    expect(consequence(third, settle(third, answer(null)), now).row.next_attempt_at).toEqual(later(600_000));
    const busy = answer(503, { retryAfter: '900' });
    expect(consequence(first, settle(first, busy), now).row.next_attempt_at).toEqual(later(900_000));
  });

  it('the last failure of the schedule fails the delivery and reports webhook.delivery_failed once per attempt', () => {
    const last = delivery({ attempts: 5, retries_done: 5 });
    const { row, outbox } = consequence(last, settle(last, answer(500)), now);
    expect(row).toMatchObject({ status: 'failed', attempts: 6, retries_done: 5, next_attempt_at: null });
    expect(outbox).toEqual({
      id: 'delivery_failed:delivery-1:6',
      partner_id: 'partner-1',
      correlation_id: 'event-1',
      event: {
        type: 'webhook.delivery_failed',
        data: {
          webhook_id: 'webhook-1',
          delivery_id: 'delivery-1',
          event_id: 'event-1',
          event_type: 'lead.created',
          account_id: 'account-1',
          attempts: 6,
          last_status_code: 500,
          last_error: 'HTTP 500',
        },
      },
    });
  });

  it('a 410 fails the delivery whatever is left of the schedule and disables the webhook', () => {
    const row = delivery();
    const settlement = settle(row, answer(410));
    expect(settlement.kind).toBe('not_retryable');
    const { row: change, outbox } = consequence(row, settlement, now);
    expect(change).toMatchObject({ status: 'failed', attempts: 1, last_status_code: 410 });
    expect(outbox).toEqual({
      id: 'disabled:delivery-1',
      partner_id: 'partner-1',
      correlation_id: 'event-1',
      event: {
        type: 'webhook.disabled',
        data: { webhook_id: 'webhook-1', reason: 'gone', delivery_id: 'delivery-1', status_code: 410 },
      },
    });
  });

  it('an attempt that threw instead of answering is recorded as a failed attempt and retried', () => {
    const row = delivery();
    const { row: change, result } = consequence(
      row,
      { kind: 'retry', at: later(30_000), error: new Error('socket hang up'), result: undefined },
      now,
    );
    expect(change).toMatchObject({
      status: 'pending',
      last_status_code: null,
      next_attempt_at: later(30_000),
    });
    expect(result.error).toBe('The attempt failed: socket hang up');
  });
});

describe('sharing the slots between endpoints', () => {
  const claimed = (id: string, webhookId: string): ClaimedRow => ({
    ...delivery({ id, webhook_id: webhookId }),
    url: 'https://example.com/hook',
    active: true,
    secret_ciphertext: 'sealed',
  });

  it('lets one endpoint hold at most its share of the slots; another endpoint takes the rest', () => {
    const waiting = [
      claimed('h1', 'hanging'),
      claimed('h2', 'hanging'),
      claimed('h3', 'hanging'),
      claimed('o1', 'other'),
    ];
    const picked = pickStartable(waiting, new Map(), 8, endpointFairness(2)).map((i) => waiting[i]!.id);
    expect(picked).toEqual(['h1', 'h2', 'o1']);
    // With the hanging endpoint's two attempts still under way, only the other endpoint goes.
    const next = pickStartable(waiting, new Map([['hanging', 2]]), 8, endpointFairness(2));
    expect(next.map((i) => waiting[i]!.id)).toEqual(['o1']);
  });

  it("gives an attempt the client's timeout plus half of what the lease leaves, within the lease", () => {
    expect(attemptBudgetMs(10_000, 40_000)).toBe(25_000);
    expect(attemptBudgetMs(3000, 5000)).toBe(4000);
    expect(attemptBudgetMs(10_000, 10_000)).toBe(10_000);
  });

  it('cancels a delivery whose webhook was deleted or disabled since the fan-out', () => {
    expect(orphanReason(claimed('d1', 'w'))).toBeUndefined();
    expect(orphanReason({ ...claimed('d1', 'w'), url: null, secret_ciphertext: null })).toBe(
      'Webhook deleted',
    );
    expect(orphanReason({ ...claimed('d1', 'w'), active: false })).toBe('Webhook inactive');
  });
});
