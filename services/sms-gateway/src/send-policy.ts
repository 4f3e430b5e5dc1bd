import { registrationHold, type RegistrationStatus } from '@leadline/domain';
import type { EventOf } from '@leadline/events';
import type {
  EventToAppend,
  FairnessPolicy,
  OutboxReport,
  RemoteOutcome,
  RetryPolicy,
} from '@leadline/runtime';
import { SmsRejectedError, type AcceptedSms } from '@leadline/telephony';
import type { OutboxRow } from './outbox';

/**
 * The gateway's decisions, as pure functions: whether a message may go out, what a send's outcome
 * reports, how an interrupted send is settled, and the policies its worker runs on (one account at a
 * time, a pass's time budget, the backoff after a pass that could not decide).
 */

/** One worker item: an account's claimed rows, in request order, leased under one claim. */
export interface AccountClaim {
  accountId: string;
  rows: OutboxRow[];
  token: string;
  leaseUntil: Date;
}

/** What the gateway knows of the account when it decides whether a row may be sent. */
export interface AccountState {
  status: string;
  phone_number: string;
}

export type FailureReason = EventOf<'message.failed'>['data']['reason'];

export const failure = (
  row: Pick<OutboxRow, 'message_id' | 'phone'>,
  reason: FailureReason,
  message: string,
  errorCode: string | null = null,
): OutboxReport => ({
  type: 'message.failed',
  data: {
    message_id: row.message_id,
    phone: row.phone,
    reason,
    error_code: errorCode,
    error_message: message,
  },
});

/** Why `row` may not be sent now, as the event that reports it; undefined when it may go out. */
export function refusal(
  row: OutboxRow,
  account: AccountState | undefined,
  optedOut: boolean,
  now: Date,
  maxQueueAgeMs: number,
): OutboxReport | undefined {
  if (!account || account.status !== 'active')
    return failure(row, 'account_deactivated', 'The account is deactivated.');
  // Compliance replies (the STOP confirmation itself) are the only messages an opted-out number gets.
  if (optedOut && row.source !== 'system') return failure(row, 'lead_opted_out', 'The number opted out.');
  return expiredBy(row, now, maxQueueAgeMs);
}

/**
 * Why `row` may not leave at `at` any more, by its age alone; undefined when it still may. A pass that
 * would wait for its number's slot asks it for the slot's time, and hands the row back to a new
 * decision rather than send it late.
 */
export function expiredBy(row: OutboxRow, at: Date, maxQueueAgeMs: number): OutboxReport | undefined {
  // A backlog (after an outage) must not go out hours late, at night; sequence and AI sends follow
  // their sending window instead.
  const requestedAt = row.requested_at ?? row.created_at;
  // One confirmation within five minutes of the opt-out, then nothing: a late one would be a message
  // after the person said stop.
  if (isOptOutConfirmation(row) && at.getTime() - requestedAt.getTime() > OPT_OUT_CONFIRMATION_WINDOW_MS)
    return failure(
      row,
      'expired',
      'An opt-out confirmation is sent within five minutes of the opt-out or not at all; this one could not be.',
    );
  if (row.expirable && at.getTime() - requestedAt.getTime() > maxQueueAgeMs)
    return failure(
      row,
      'expired',
      `The message waited longer than ${maxQueueAgeMs / 60_000} minutes to be sent.`,
    );
  return undefined;
}

/** How long after an opt-out its confirmation may still be sent (CTIA: one confirmation, at once). */
export const OPT_OUT_CONFIRMATION_WINDOW_MS = 5 * 60_000;

export const isOptOutConfirmation = (row: Pick<OutboxRow, 'source' | 'answers'>) =>
  row.source === 'system' && row.answers === 'opt_out';

/** A compliance reply: owed to the person who asked (a confirmation, a HELP answer), never capped. */
export const isComplianceReply = (row: Pick<OutboxRow, 'source'>) => row.source === 'system';

/**
 * The carriers' sending rule applied to a row (see registrationHold): `registration_pending` while the
 * account's campaign is not approved and the number is a US long code, unless the row is an opt-out
 * confirmation or a HELP answer; null when it may go.
 */
export function registrationHoldOf(
  row: Pick<OutboxRow, 'source' | 'answers'>,
  rule: { enforced: boolean; campaignStatus: RegistrationStatus | undefined; from: string },
) {
  const answers =
    row.answers === 'opt_out' || row.answers === 'opt_in' || row.answers === 'help' ? row.answers : undefined;
  return registrationHold(rule, { source: row.source as 'manual' | 'sequence' | 'ai' | 'system', answers });
}

/**
 * What a send's outcome reports: sent, or refused by the provider. Undefined when it is unknown (a
 * timeout, a reset connection: the provider may have the message): such a row is never sent again and
 * reconciliation settles it.
 */
export function sendReport(row: OutboxRow, outcome: RemoteOutcome<AcceptedSms>): OutboxReport | undefined {
  if (outcome.ok) {
    const { providerMessageId, status } = outcome.value;
    return {
      type: 'message.sent',
      data: { message_id: row.message_id, phone: row.phone, provider_message_id: providerMessageId, status },
    };
  }
  if (outcome.error instanceof SmsRejectedError)
    return failure(row, 'provider_rejected', outcome.error.message, outcome.error.code);
  return undefined;
}

/**
 * How an interrupted send (a row `sending` past the grace period) is settled from what the read models
 * learned: `null` when the log has its outcome already, sent once a status callback named it, failed
 * (`send_unconfirmed`) when none came within `timeoutMs`; undefined to wait longer.
 */
export function reconciliation(
  row: OutboxRow,
  message: { sent: boolean; status: string; provider_message_id: string | null } | undefined,
  now: Date,
  timeoutMs: number,
): { report: OutboxReport | null } | undefined {
  if (message?.sent) return { report: null };
  if (message?.provider_message_id) {
    const status = (
      message.status === 'received' ? 'queued' : message.status
    ) as EventOf<'message.sent'>['data']['status'];
    return {
      report: {
        type: 'message.sent',
        data: {
          message_id: row.message_id,
          phone: row.phone,
          provider_message_id: message.provider_message_id,
          status,
        },
      },
    };
  }
  if (row.sending_at && now.getTime() - row.sending_at.getTime() > timeoutMs)
    return {
      report: failure(
        row,
        'send_unconfirmed',
        'The send was interrupted and the provider never confirmed the message.',
      ),
    };
  return undefined;
}

/** A pass's outcomes in the order the messages were requested (the log reports them in that order). */
export function inRequestOrder<T extends { row: OutboxRow }>(
  outcomes: readonly T[],
  rows: readonly OutboxRow[],
) {
  const turn = new Map(rows.map((row, index) => [row.message_id, index]));
  return outcomes.toSorted((a, b) => turn.get(a.row.message_id)! - turn.get(b.row.message_id)!);
}

/** One account's messages by one worker at a time, in order (the claim keeps other instances off it). */
export const oneWorkerPerAccount: FairnessPolicy<AccountClaim> = {
  keyOf: (claim) => claim.accountId,
  perKey: 1,
};

/**
 * A pass that could not decide (the log or the read models unavailable) is tried again after a short,
 * jittered backoff, for as long as it takes: its messages are not refused for an outage. Sends are never
 * retried: a send whose outcome is unknown is settled by reconciliation.
 */
export const passRetryPolicy: RetryPolicy = {
  backoff: { kind: 'exponential', baseMs: 1000, maxMs: 30_000 },
  jitter: 'full',
  maxAttempts: Number.POSITIVE_INFINITY,
  retryable: 'all',
};

/**
 * How long one account's pass may hold a worker: half its lease, so a claimed account waiting for a free
 * worker starts only with enough lease left. A pass cut short stops before its next send, and the rest of
 * the account's messages go back to the queue, in order, for the next claim.
 */
export const passBudgetMs = (leaseMs: number) => leaseMs / 2;

/**
 * The `message.held` that says why a row waits: `nextAttemptAt` when it is decided again, null when
 * its reason must lift first (the campaign's approval).
 */
export function heldEvent(
  row: Pick<OutboxRow, 'message_id' | 'phone' | 'correlation_id' | 'causation_id'>,
  hold: { reason: string },
  nextAttemptAt: Date | null,
): EventToAppend {
  return {
    type: 'message.held',
    data: {
      message_id: row.message_id,
      phone: row.phone,
      reason: hold.reason as EventOf<'message.held'>['data']['reason'],
      next_attempt_at: nextAttemptAt?.toISOString() ?? null,
    },
    correlationId: row.correlation_id,
    causationId: row.causation_id,
  };
}
