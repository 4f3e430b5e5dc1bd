import type { EventData } from '@leadline/events';
import { leadLocation, proactiveHold, wallClockAt, zonedInstant, type SendingWindow } from '@leadline/domain';

/**
 * Pacing, as pure functions: when a number's next message may leave, and whether it must wait for the
 * next sending window or the brand's next day instead. The gateway's shell reads and claims the pace
 * in Postgres (see pace-store.ts); nothing here reads a clock or a table.
 */

/** What a number and its brand may carry. */
export interface PaceSettings {
  /** Messages a second the number may send (the campaign's throughput; 1 for a plain long code). */
  messagesPerSecond: number;
  /** Messages a day the brand may send on the carriers' day; null when no cap is set. */
  brandDailyCap: number | null;
}

/** The account's own settings (its `sending_rate`), each null for the deployment's default. */
export interface AccountSendingRate {
  messages_per_second: number | null;
  daily_cap: number | null;
}

/**
 * What the account's number may carry: each of the account's settings that is set, else the
 * deployment's. A deployment that does not pace (undefined) paces only an account that set a rate or a
 * cap (an unset rate is then unlimited).
 */
export function accountPaceSettings(
  deployment: PaceSettings | undefined,
  account: AccountSendingRate,
): PaceSettings | undefined {
  if (!deployment && account.messages_per_second === null && account.daily_cap === null) return undefined;
  return {
    messagesPerSecond:
      account.messages_per_second ?? deployment?.messagesPerSecond ?? Number.POSITIVE_INFINITY,
    brandDailyCap: account.daily_cap ?? deployment?.brandDailyCap ?? null,
  };
}

/** A number's pace as stored: when its next message may leave, and what its brand sent on the carriers' day. */
export interface PaceState {
  nextSendAt: Date;
  capDay: string;
  sentOnCapDay: number;
}

/** The message the pace is decided for. */
export interface PacedMessage {
  phone: string;
  /** A sequence step: it leaves only inside the lead's sending window. */
  proactive: boolean;
  /** A compliance reply (an opt-out or opt-in confirmation, a HELP answer): owed, never capped. */
  compliance: boolean;
}

export type HoldReason = EventData<'message.held'>['reason'];

export type PaceDecision =
  /**
   * It leaves at `at` (its slot: now, or within the claim-ahead time of now); `pace` is the number's
   * pace once it has.
   */
  | { kind: 'send'; at: Date; pace: PaceState }
  /** The number's next slot is later: the account's rows wait until `until`, in order. */
  | { kind: 'wait'; until: Date }
  /** This message waits (for its window, or the brand's next day); the account's other rows go on. */
  | { kind: 'hold'; reason: HoldReason; until: Date };

/**
 * The carriers count a brand's daily messages on their own day, which T-Mobile resets at midnight
 * Pacific time.
 */
export const CARRIER_DAY_ZONE = 'America/Los_Angeles';

/** The carriers' day an instant falls on, `YYYY-MM-DD`. */
export function carrierDay(at: Date): string {
  const { year, month, day } = wallClockAt(at, CARRIER_DAY_ZONE);
  return `${year}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
}

/** The first instant of the carriers' next day after `at`. */
export function nextCarrierDay(at: Date): Date {
  const { year, month, day } = wallClockAt(at, CARRIER_DAY_ZONE);
  return zonedInstant(year, month, day + 1, 0, CARRIER_DAY_ZONE);
}

/** The time between two messages of one number. */
export const spacingMs = (settings: PaceSettings) => 1000 / settings.messagesPerSecond;

/**
 * Whether a message may leave the number now:
 * - its slot is the number's next send time (now, if that passed);
 * - a sequence step whose slot is outside the lead's sending window (the account's window, the lead's
 *   state's hours, Sundays and holidays) is held until the window opens again, rather than sent at the
 *   edge of quiet hours; the account's other messages go on;
 * - a slot later than now makes the account's messages wait for it, in order, unless it is within
 *   `aheadMs` of now: then it is claimed now and the message leaves at the slot (the shell claims and
 *   marks it ahead, so the provider call itself is not late by the mark's round trip);
 * - past the brand's daily cap, a message is held until the carriers' next day; compliance replies are
 *   owed to the person who asked and are never held by the cap (they count towards it);
 * - otherwise it leaves, and the number's next slot is one spacing later.
 */
export function paceDecision(input: {
  now: Date;
  settings: PaceSettings;
  pace: PaceState | undefined;
  message: PacedMessage;
  window: SendingWindow;
  aheadMs?: number;
}): PaceDecision {
  const { now, settings, pace, message, window, aheadMs = 0 } = input;
  const slot = pace && pace.nextSendAt.getTime() > now.getTime() ? pace.nextSendAt : now;
  if (message.proactive) {
    const hold = proactiveHold(slot, window, leadLocation(message.phone, window.time_zone));
    // No messages sent are given, so the state's per-lead cap (the sequencer's rule) never holds here.
    if (hold && hold.reason !== 'frequency_cap')
      return { kind: 'hold', reason: hold.reason, until: hold.next_allowed_at };
  }
  if (slot.getTime() > now.getTime() + aheadMs) return { kind: 'wait', until: slot };
  const capDay = carrierDay(slot);
  const sent = pace?.capDay === capDay ? pace.sentOnCapDay : 0;
  if (!message.compliance && settings.brandDailyCap !== null && sent >= settings.brandDailyCap)
    return { kind: 'hold', reason: 'brand_daily_cap', until: nextCarrierDay(slot) };
  return {
    kind: 'send',
    at: slot,
    pace: { nextSendAt: new Date(slot.getTime() + spacingMs(settings)), capDay, sentOnCapDay: sent + 1 },
  };
}

/**
 * The number's pace once its provider call was made at `calledAt`: the next slot is one spacing after
 * the call when that is later than the one claimed (the call was late: a slow mark, a busy event loop).
 * Slots are claimed one spacing apart, but only this keeps the calls themselves a spacing apart.
 */
export function afterCall(pace: PaceState, calledAt: Date, settings: PaceSettings): PaceState {
  const fromCall = calledAt.getTime() + spacingMs(settings);
  return fromCall > pace.nextSendAt.getTime() ? { ...pace, nextSendAt: new Date(fromCall) } : pace;
}

/**
 * How long a number's queue takes to leave at its pace: its next slot, then one spacing per message
 * after the first. Unpaced, nothing but the slot.
 */
export function drainSeconds(
  queue: { depth: number; nextSendAt: Date | null },
  settings: PaceSettings | undefined,
  now: Date,
): number {
  const untilSlot = queue.nextSendAt ? Math.max(0, queue.nextSendAt.getTime() - now.getTime()) : 0;
  const spacing = settings ? spacingMs(settings) : 0;
  return (untilSlot + Math.max(0, queue.depth - 1) * spacing) / 1000;
}
