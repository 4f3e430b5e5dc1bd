import type { DomainEvent } from '@leadline/events';
import { accountEvents } from '@leadline/test-kit';
import { expect } from 'vitest';
import { eventsAppliedTwice, eventsInApplicationOrder } from './log';
import type { TestSystem } from './system';
import { longestUnavailability, type WriteOutcome } from './write-loop';

/** What a fault test's write loop came to, for its assertions and its printed accounting. */
export interface WriteAccounting {
  acknowledged: WriteOutcome[];
  refused: WriteOutcome[];
  /** Events of acknowledged writes found on the log (each exactly once). */
  onTheLog: number;
  /** The same found in the read models. */
  inReadModels: number;
  /** Refused writes whose events are on the log all the same (a send that landed past its bound). */
  refusedLanded: number;
  eventsOnTheLog: number;
  eventsApplied: number;
  appliedTwice: string[];
  /** Acknowledged imports the GET sent right after the answer did not find. */
  unread: WriteOutcome[];
  imports: number;
}

/**
 * The accounting of a fault test with the write loop running through it (Jepsen's, of acknowledged
 * writes), on the projector's `appliedEvents`:
 *  - every answer an acknowledgement or a 503 with Retry-After, never a 500;
 *  - every acknowledged write's events on the log exactly once and in the read models;
 *  - a refused write's events on the log never, or with `refusedMayLand` at most once: a send the
 *    broker took past the write's bound still lands (the 503 says retry, and nothing was promised);
 *  - every event on the account topic applied exactly once, each account's in log order.
 * Read-your-writes is counted, for the caller to assert.
 */
export async function accountForWrites(
  system: TestSystem,
  accounts: readonly string[],
  outcomes: readonly WriteOutcome[],
  options: { refusedMayLand?: boolean } = {},
): Promise<WriteAccounting> {
  const refused = outcomes.filter((outcome) => outcome.status >= 300);
  for (const outcome of refused) {
    expect(outcome.status, `${outcome.op} answered ${outcome.status} ${outcome.code}`).toBe(503);
    expect(outcome.retryAfter).toBeDefined();
  }
  const acknowledged = outcomes.filter((outcome) => outcome.status < 300);

  const events = await accountEvents(system.services);
  const ids = events.map((event) => event.id);
  expect(new Set(ids).size).toBe(ids.length);
  const created = new Map<string, number>();
  const requested = new Map<string, number>();
  for (const event of events) {
    if (event.type === 'lead.created') {
      const key = `${event.account_id} ${(event.data as { phone: string }).phone}`;
      created.set(key, (created.get(key) ?? 0) + 1);
    }
    if (event.type === 'message.outbound_requested') {
      const id = (event.data as { message_id: string }).message_id;
      requested.set(id, (requested.get(id) ?? 0) + 1);
    }
  }
  let onTheLog = 0;
  let refusedLanded = 0;
  for (const outcome of outcomes) {
    const found = outcome.phones.map((phone) => created.get(`${outcome.account} ${phone}`) ?? 0);
    if (outcome.status < 300) {
      found.forEach((count, k) => expect(count, `${outcome.op} of ${outcome.phones[k]}`).toBe(1));
      onTheLog += found.length;
      if (outcome.messageId) {
        expect(requested.get(outcome.messageId), `message ${outcome.messageId}`).toBe(1);
        onTheLog += 1;
      }
    } else {
      // A write's events are one batch: all of them landed or none did.
      const landed = Math.max(0, ...found);
      expect(landed, `refused ${outcome.op} of ${outcome.phones.join(' ')}`).toBeLessThanOrEqual(
        options.refusedMayLand ? 1 : 0,
      );
      if (landed > 0) expect(found.every((count) => count === landed)).toBe(true);
      refusedLanded += landed;
    }
  }
  const importedPhones = acknowledged.flatMap((outcome) => outcome.phones);
  const messageIds = acknowledged.flatMap((outcome) => (outcome.messageId ? [outcome.messageId] : []));
  expect(onTheLog).toBe(importedPhones.length + messageIds.length);

  const { db } = system.services;
  const leads = await db
    .selectFrom('leads')
    .select(['account_id', 'phone'])
    .where('account_id', 'in', accounts)
    .execute();
  const leadKeys = new Set(leads.map((lead) => `${lead.account_id} ${lead.phone}`));
  const messages = new Set(
    (await db.selectFrom('messages').select('id').where('account_id', 'in', accounts).execute()).map(
      (message) => message.id,
    ),
  );
  let inReadModels = 0;
  for (const outcome of acknowledged) {
    for (const phone of outcome.phones) if (leadKeys.has(`${outcome.account} ${phone}`)) inReadModels++;
    if (outcome.messageId && messages.has(outcome.messageId)) inReadModels++;
  }
  expect(inReadModels).toBe(onTheLog);

  // Nothing applied twice, nothing skipped, each account's events applied in log order.
  const appliedTwice = await eventsAppliedTwice(db);
  expect(appliedTwice).toEqual([]);
  const applied = await eventsInApplicationOrder(db);
  const byAccount = (list: readonly DomainEvent[]) => {
    const grouped = new Map<string, string[]>();
    for (const event of list) {
      const key = event.account_id ?? '';
      grouped.set(key, grouped.get(key) ?? []);
      grouped.get(key)!.push(event.id);
    }
    return grouped;
  };
  const eventById = new Map(events.map((event) => [event.id, event]));
  const appliedAccountEvents = applied.flatMap((id) => (eventById.has(id) ? [eventById.get(id)!] : []));
  expect(appliedAccountEvents.length).toBe(events.length);
  expect(byAccount(appliedAccountEvents)).toEqual(byAccount(events));

  const imports = acknowledged.filter((outcome) => outcome.op !== 'message');
  return {
    acknowledged,
    refused,
    onTheLog,
    inReadModels,
    refusedLanded,
    eventsOnTheLog: events.length,
    eventsApplied: appliedAccountEvents.length,
    appliedTwice,
    unread: imports.filter((outcome) => outcome.readBack !== true),
    imports: imports.length,
  };
}

/** The accounting's lines, as the fault tests print them under their own heading. */
export function accountingLines(outcomes: readonly WriteOutcome[], accounting: WriteAccounting): string[] {
  const { acknowledged, refused, onTheLog, inReadModels, unread, imports } = accounting;
  const { gapMs, slowestMs } = longestUnavailability(outcomes);
  const refusalMs = refused.map((o) => o.answeredAt - o.sentAt).sort((a, b) => a - b);
  const slowestRefusal = Math.round(refusalMs.at(-1) ?? 0);
  const medianRefusal = Math.round(refusalMs[Math.floor(refusalMs.length / 2)] ?? 0);
  const codes = [...new Set(refused.map((outcome) => `503 ${outcome.code}`))].join(', ') || 'none';
  return [
    `  writes attempted ${outcomes.length}, acknowledged ${acknowledged.length}, refused ${refused.length} (${codes}), refused but on the log ${accounting.refusedLanded}`,
    `  acknowledged writes' events found on the log ${onTheLog} (each exactly once), in the read models ${inReadModels}`,
    `  events on the account topic ${accounting.eventsOnTheLog}, applied ${accounting.eventsApplied}, duplicates ${accounting.appliedTwice.length}, in log order per account`,
    `  read-your-writes: ${imports} acknowledged imports read back, ${unread.length} not found`,
    `  longest unavailability of writes ${gapMs} ms (no acknowledgement in that stretch); slowest answer ${slowestMs} ms, refusals ${medianRefusal} ms at the median and ${slowestRefusal} ms at most`,
  ];
}
