import type { DomainEvent } from '@leadline/events';
import type { Infrastructure } from '@leadline/runtime';
import { accountEvents } from '@leadline/test-kit';
import { longestUnavailability, type WriteOutcome } from './write-loop';

/**
 * What a write loop's answers promised, checked against the log and the read models: the accounting
 * every fault test states (writes attempted, acknowledged, found on the log, found in the read models).
 */
export interface WriteAccounting {
  outcomes: readonly WriteOutcome[];
  acknowledged: WriteOutcome[];
  refused: WriteOutcome[];
  /** Every event on the account topic. */
  events: DomainEvent[];
  /** Acknowledged writes' events found on the log (each lead created, each message requested). */
  onTheLog: number;
  /** ...and found in the read models (the lead, the message). */
  inReadModels: number;
  /**
   * Writes whose events are not on the log as their answer says: an acknowledged one's not exactly
   * once, or a refused one's at all. Empty when the accounting holds.
   */
  misplaced: string[];
  /** Refusals other than a 503 with Retry-After (a 500, a missing header). */
  wrongRefusals: string[];
  /** Event ids on the log more than once. */
  duplicateIds: string[];
  /** Refused writes whose events are on the log all the same (with `refusedMayLand`). */
  refusedLanded: number;
}

export async function accountWrites(
  services: Pick<Infrastructure, 'admin' | 'kafka' | 'topics' | 'codec' | 'db'>,
  outcomes: readonly WriteOutcome[],
  accounts: readonly string[],
  /**
   * A refused write's events may be on the log once: a send the broker took after the write's bound
   * had passed still lands (what the 503 allows; a fault of the broker, not of the database).
   */
  options: { refusedMayLand?: boolean } = {},
): Promise<WriteAccounting> {
  const acknowledged = outcomes.filter((outcome) => outcome.status < 300);
  const refused = outcomes.filter((outcome) => outcome.status >= 300);
  const wrongRefusals = refused
    .filter((outcome) => outcome.status !== 503 || outcome.retryAfter === undefined)
    .map((o) => `${o.op} answered ${o.status} ${o.code} (Retry-After ${o.retryAfter ?? 'missing'})`);

  const events = await accountEvents(services);
  const seen = new Set<string>();
  const duplicateIds = events.filter((event) => seen.has(event.id) || !seen.add(event.id)).map((e) => e.id);
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
  const misplaced: string[] = [];
  let onTheLog = 0;
  let refusedLanded = 0;
  for (const outcome of outcomes) {
    const expected = outcome.status < 300 ? 1 : 0;
    const found = outcome.phones.map((phone) => created.get(`${outcome.account} ${phone}`) ?? 0);
    // A write's events are one batch: a refused one that landed has all of them on the log once.
    const landed =
      expected === 0 && options.refusedMayLand && found.length > 0 && found.every((n) => n === 1);
    outcome.phones.forEach((phone, k) => {
      if (found[k] !== expected && !landed)
        misplaced.push(`${outcome.op} of ${phone} answered ${outcome.status}: on the log ${found[k]} times`);
      if (expected === 1) onTheLog += found[k]!;
    });
    if (landed) refusedLanded++;
    if (outcome.messageId) {
      const found = requested.get(outcome.messageId) ?? 0;
      if (found !== 1) misplaced.push(`message ${outcome.messageId} acknowledged: on the log ${found} times`);
      onTheLog += found;
    }
  }

  const leads = await services.db
    .selectFrom('leads')
    .select(['account_id', 'phone'])
    .where('account_id', 'in', accounts)
    .execute();
  const leadKeys = new Set(leads.map((lead) => `${lead.account_id} ${lead.phone}`));
  const messages = await services.db
    .selectFrom('messages')
    .select('id')
    .where('account_id', 'in', accounts)
    .execute();
  const messageIds = new Set(messages.map((message) => message.id));
  let inReadModels = 0;
  for (const outcome of acknowledged) {
    for (const phone of outcome.phones) if (leadKeys.has(`${outcome.account} ${phone}`)) inReadModels++;
    if (outcome.messageId && messageIds.has(outcome.messageId)) inReadModels++;
  }
  return {
    outcomes,
    acknowledged,
    refused,
    events,
    onTheLog,
    inReadModels,
    misplaced,
    wrongRefusals,
    duplicateIds,
    refusedLanded,
  };
}

/** The accounting's lines for a test's output, under `title`, with `more` lines of the test's own. */
export function accountingReport(title: string, accounting: WriteAccounting, more: string[] = []): string {
  const { outcomes, acknowledged, refused, onTheLog, inReadModels, events, duplicateIds } = accounting;
  const { gapMs, slowestMs } = longestUnavailability(outcomes);
  const refusalMs = refused.map((o) => o.answeredAt - o.sentAt).sort((a, b) => a - b);
  const slowestRefusal = Math.round(refusalMs.at(-1) ?? 0);
  const medianRefusal = Math.round(refusalMs[Math.floor(refusalMs.length / 2)] ?? 0);
  const codes = [...new Set(refused.map((outcome) => `${outcome.status} ${outcome.code}`))];
  return [
    title,
    `  writes attempted ${outcomes.length}, acknowledged ${acknowledged.length}, refused ${refused.length} (${codes.join(', ') || 'none'}), refused but on the log ${accounting.refusedLanded}`,
    `  acknowledged writes' events found on the log ${onTheLog} (each exactly once), in the read models ${inReadModels}`,
    `  events on the account topic ${events.length}, duplicate event ids ${duplicateIds.length}`,
    ...more,
    `  longest unavailability of writes ${gapMs} ms (no acknowledgement in that stretch); slowest answer ${slowestMs} ms, refusals ${medianRefusal} ms at the median and ${slowestRefusal} ms at most`,
  ].join('\n');
}
