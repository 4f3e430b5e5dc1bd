import { pickStartable } from '@leadline/runtime';
import { SmsRejectedError } from '@leadline/telephony';
import { describe, expect, it } from 'vitest';
import type { OutboxRow } from './outbox';
import {
  inRequestOrder,
  oneWorkerPerAccount,
  reconciliation,
  refusal,
  registrationHoldOf,
  sendReport,
  type AccountClaim,
} from './send-policy';

const now = new Date('2026-03-08T10:00:00.000Z');
const ago = (ms: number) => new Date(now.getTime() - ms);
const HOUR = 3600_000;

const row = (fields: Partial<OutboxRow> = {}): OutboxRow => ({
  message_id: 'm1',
  account_id: 'acc-1',
  partner_id: 'partner-1',
  phone: '+15125550100',
  body: 'Hello',
  source: 'manual',
  correlation_id: 'c',
  causation_id: 'e',
  state: 'pending',
  lease_until: null,
  sending_at: null,
  provider_message_id: null,
  created_at: ago(60_000),
  updated_at: ago(60_000),
  requested_at: ago(60_000),
  expirable: true,
  report: null,
  reported_at: null,
  claim_token: null,
  held_until: null,
  hold_reason: null,
  answers: null,
  proactive: false,
  ...fields,
});
const active = { status: 'active', phone_number: '+15125550000' };
const reasonOf = (report: ReturnType<typeof refusal>) =>
  report?.type === 'message.failed' ? report.data.reason : report;

describe('whether a message may go out', () => {
  it('goes out from an active account to a number that has not opted out', () => {
    expect(refusal(row(), active, false, now, HOUR)).toBeUndefined();
  });

  it('refuses a deactivated (or unknown) account', () => {
    expect(reasonOf(refusal(row(), { ...active, status: 'deactivated' }, false, now, HOUR))).toBe(
      'account_deactivated',
    );
    expect(reasonOf(refusal(row(), undefined, false, now, HOUR))).toBe('account_deactivated');
  });

  it('refuses an opted-out number, except the compliance reply confirming the opt-out', () => {
    expect(reasonOf(refusal(row(), active, true, now, HOUR))).toBe('lead_opted_out');
    expect(refusal(row({ source: 'system' }), active, true, now, HOUR)).toBeUndefined();
  });

  it('expires a manual message that waited longer than the queue allows; a sequence step never expires', () => {
    const stale = row({ requested_at: ago(HOUR + 1) });
    expect(refusal(stale, active, false, now, HOUR)).toEqual({
      type: 'message.failed',
      data: {
        message_id: 'm1',
        phone: '+15125550100',
        reason: 'expired',
        error_code: null,
        error_message: 'The message waited longer than 60 minutes to be sent.',
      },
    });
    expect(refusal(row({ requested_at: ago(HOUR) }), active, false, now, HOUR)).toBeUndefined();
    expect(
      refusal({ ...stale, expirable: false, source: 'sequence' }, active, false, now, HOUR),
    ).toBeUndefined();
    // A row queued before requests kept their time counts from when it was queued.
    expect(
      reasonOf(refusal(row({ requested_at: null, created_at: ago(2 * HOUR) }), active, false, now, HOUR)),
    ).toBe('expired');
  });
});

describe('one opt-out confirmation within five minutes, then nothing', () => {
  const confirmation = (waitedMs: number) =>
    row({ source: 'system', answers: 'opt_out', requested_at: ago(waitedMs) });

  it('sends the confirmation within five minutes of the opt-out and drops it, as expired, after', () => {
    expect(refusal(confirmation(5 * 60_000), active, true, now, HOUR)).toBeUndefined();
    expect(refusal(confirmation(5 * 60_000 + 1), active, true, now, HOUR)).toMatchObject({
      type: 'message.failed',
      data: { reason: 'expired', error_message: expect.stringContaining('five minutes') },
    });
  });

  it('keeps the queue’s own limit for the other compliance replies', () => {
    const help = row({ source: 'system', answers: 'help', requested_at: ago(30 * 60_000) });
    expect(refusal(help, active, false, now, HOUR)).toBeUndefined();
  });
});

describe('the carriers’ sending rule on a row', () => {
  const pending = { enforced: true, campaignStatus: 'pending' as const, from: '+15125550000' };

  it('holds everything but the opt-out confirmation and the HELP answer before approval', () => {
    expect(registrationHoldOf(row(), pending)).toBe('registration_pending');
    expect(registrationHoldOf(row({ source: 'system', answers: 'opt_in' }), pending)).toBe(
      'registration_pending',
    );
    // A compliance reply queued before replies said what they answer may be anything: it waits.
    expect(registrationHoldOf(row({ source: 'system' }), pending)).toBe('registration_pending');
    expect(registrationHoldOf(row({ source: 'system', answers: 'opt_out' }), pending)).toBeNull();
    expect(registrationHoldOf(row({ source: 'system', answers: 'help' }), pending)).toBeNull();
    expect(registrationHoldOf(row(), { ...pending, campaignStatus: 'approved' })).toBeNull();
    expect(registrationHoldOf(row(), { ...pending, enforced: false })).toBeNull();
  });
});

describe("what a send's outcome reports", () => {
  it('sent, refused by the provider with its code, or nothing when the outcome is unknown', () => {
    expect(sendReport(row(), { ok: true, value: { providerMessageId: 'SM1', status: 'queued' } })).toEqual({
      type: 'message.sent',
      data: { message_id: 'm1', phone: '+15125550100', provider_message_id: 'SM1', status: 'queued' },
    });
    const rejected = new SmsRejectedError('Invalid number', 'twilio_21211');
    expect(sendReport(row(), { ok: false, error: rejected })).toMatchObject({
      type: 'message.failed',
      data: { reason: 'provider_rejected', error_code: 'twilio_21211' },
    });
    expect(sendReport(row(), { ok: false, error: new Error('socket hang up') })).toBeUndefined();
  });
});

describe('settling an interrupted send', () => {
  const interrupted = row({ state: 'sending', sending_at: ago(5 * 60_000) });

  it('from the status callback when one came, as sent', () => {
    expect(
      reconciliation(
        interrupted,
        { sent: false, status: 'received', provider_message_id: 'SM9' },
        now,
        10 * 60_000,
      ),
    ).toEqual({
      report: {
        type: 'message.sent',
        data: { message_id: 'm1', phone: '+15125550100', provider_message_id: 'SM9', status: 'queued' },
      },
    });
  });

  it('with nothing to report when the log has its outcome, and waits until the timeout, then fails it', () => {
    const unconfirmed = { sent: false, status: 'queued', provider_message_id: null };
    expect(reconciliation(interrupted, { ...unconfirmed, sent: true }, now, 10 * 60_000)).toEqual({
      report: null,
    });
    expect(reconciliation(interrupted, unconfirmed, now, 10 * 60_000)).toBeUndefined();
    expect(reconciliation(interrupted, unconfirmed, now, 4 * 60_000)).toMatchObject({
      report: { type: 'message.failed', data: { reason: 'send_unconfirmed' } },
    });
  });
});

describe("the gateway's worker policies", () => {
  it("reports a pass's outcomes in the order the messages were requested", () => {
    const rows = ['m1', 'm2', 'm3'].map((id) => row({ message_id: id }));
    const outcomes = [rows[2]!, rows[0]!, rows[1]!].map((r) => ({ row: r, report: null }));
    expect(inRequestOrder(outcomes, rows).map((outcome) => outcome.row.message_id)).toEqual([
      'm1',
      'm2',
      'm3',
    ]);
  });

  it("runs one account's claim at a time: a second claim of a busy account waits, others go", () => {
    const claim = (accountId: string): AccountClaim => ({ accountId, rows: [], token: 't', leaseUntil: now });
    const waiting = [claim('acc-1'), claim('acc-2'), claim('acc-1')];
    expect(pickStartable(waiting, new Map(), 4, oneWorkerPerAccount)).toEqual([0, 1]);
    expect(pickStartable(waiting, new Map([['acc-1', 1]]), 4, oneWorkerPerAccount)).toEqual([1]);
  });
});
