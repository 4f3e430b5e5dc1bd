import type { DomainEvent } from '@leadline/events';
import { newUuid } from '@leadline/runtime';
import { describe, expect, it } from 'vitest';
import { applyBatch } from '../src/apply-batch';
import { projections } from '../src/projections';
import { accountEventMaker, projectorLog } from './account-log';

const log = projectorLog('leadline-conversation-counts-test');
const accountId = newUuid();
const event = accountEventMaker(accountId);
const phone = '+15125550181';
const other = '+15125550182';

const at = (second: number) => new Date(Date.UTC(2026, 0, 1, 9, 0, second)).toISOString();
const received = (id: string, from: string, body: string, second: number): DomainEvent => ({
  ...event('message.received', {
    message_id: id,
    phone: from,
    to: '+15550000004',
    body,
    provider_message_id: `SM${id}`,
    media: [],
  }),
  occurred_at: at(second),
});
const requested = (id: string, to: string, body: string, second: number): DomainEvent => ({
  ...event('message.outbound_requested', {
    message_id: id,
    phone: to,
    body,
    source: 'manual',
    sender_name: null,
  }),
  occurred_at: at(second),
});

/** Each number's conversation: its count, preview and last message's time. */
const conversations = () =>
  log.infrastructure.db
    .selectFrom('conversations')
    .select(['phone', 'message_count', 'preview', 'last_message_at'])
    .where('account_id', '=', accountId)
    .execute()
    .then((rows) =>
      Object.fromEntries(rows.map(({ phone: number, ...conversation }) => [number, conversation])),
    );
const messagesReceived = () =>
  log.infrastructure.db
    .selectFrom('usage_counters')
    .select('messages_received')
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow()
    .then((row) => row.messages_received);

describe('a run of messages on its conversations', () => {
  it('counts each message stored once, previews the newest whatever the log order, and never goes back to an older one', async () => {
    const first = [
      received('m1', phone, 'The newest, logged first', 30),
      received('m2', phone, 'Older, logged second', 10),
      // A redelivered message (the same id) is stored once and counted once.
      received('m1', phone, 'The newest, logged first', 30),
      received('m3', other, 'Another number', 20),
      requested('m4', phone, 'An answer, older than the newest', 25),
    ];
    const later = [
      received('m5', phone, 'Delivered late, sent before all the others', 5),
      requested('m6', other, '🙂'.repeat(200), 40),
    ];
    const { topic, partition, records } = await log.append(accountId, [...first, ...later]);

    await applyBatch(log.infrastructure.db, projections, topic, partition, records(first, 0));
    expect(await conversations()).toEqual({
      [phone]: { message_count: 3, preview: 'The newest, logged first', last_message_at: new Date(at(30)) },
      [other]: { message_count: 1, preview: 'Another number', last_message_at: new Date(at(20)) },
    });
    expect(await messagesReceived()).toBe(3);

    await applyBatch(log.infrastructure.db, projections, topic, partition, records(later, first.length));
    expect(await conversations()).toEqual({
      [phone]: { message_count: 4, preview: 'The newest, logged first', last_message_at: new Date(at(30)) },
      // The preview is the body's first 160 characters (an emoji is one).
      [other]: { message_count: 2, preview: '🙂'.repeat(160), last_message_at: new Date(at(40)) },
    });
    expect(await messagesReceived()).toBe(4);
  });
});
