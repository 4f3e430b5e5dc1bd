import { randomUUID } from 'node:crypto';
import type { EventOf } from '@leadline/events';
import {
  createDb,
  createPersonalDataKeys,
  ensureDatabase,
  migrate,
  personalDataKeySettings,
  type Database,
  type PositionedEvent,
} from '@leadline/runtime';
import { createTestEnvironment, fakeClock, testDocuments, type TestEnvironment } from '@leadline/test-kit';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { intakeBatch, type IntakeDeps } from '../src/intake';

const REPLY_DELAY_MS = 1_000;
const accountId = 'acc_intake';

let env: TestEnvironment;
let db: Kysely<Database>;
let deps: IntakeDeps;
beforeAll(async () => {
  env = await createTestEnvironment();
  await ensureDatabase(env.config.DATABASE_URL);
  await migrate(env.config.DATABASE_URL);
  db = createDb(env.config.DATABASE_URL);
  deps = {
    db,
    clock: fakeClock(new Date('2026-03-02T15:00:30Z')),
    replyDelayMs: REPLY_DELAY_MS,
    personalDataKeys: createPersonalDataKeys(db, personalDataKeySettings({ PERSONAL_DATA_KEYS: [] })),
    documents: testDocuments(db).documents,
  };
});
afterAll(async () => {
  await db?.destroy();
  await env?.dispose();
});

let offset = 0;
function received(phone: string, body: string, occurredAt: string): PositionedEvent {
  const event: EventOf<'message.received'> = {
    id: randomUUID(),
    type: 'message.received',
    version: 1,
    account_id: accountId,
    partner_id: 'prt_intake',
    occurred_at: occurredAt,
    actor: { kind: 'system', service: 'inbound-decider' },
    correlation_id: randomUUID(),
    causation_id: null,
    data: {
      message_id: randomUUID(),
      phone,
      to: '+15125550100',
      body,
      provider_message_id: randomUUID(),
      media: [],
    },
  };
  return { offset: String(offset++), event };
}

const turnOf = (phone: string) =>
  db
    .selectFrom('ai_pending_turns')
    .select(['due_at', 'causation_id'])
    .where('id', '=', `inbound:${accountId}:${phone}`)
    .executeTakeFirstOrThrow();
const queuedBodies = (phone: string) =>
  db
    .selectFrom('ai_pending_messages')
    .select('body')
    .where('phone', '=', phone)
    .orderBy('received_at')
    .execute()
    .then((rows) => rows.map((row) => row.body));

describe('the intake of inbound messages', () => {
  it('queues a batch holding several messages of one number as one turn, due after its latest message', async () => {
    const phone = '+15125550701';
    const other = '+15125550702';
    // Log order is not always time order: the second message of the number was sent earlier.
    const latest = received(phone, 'the latest one', '2026-03-02T15:00:05Z');
    const earlier = received(phone, 'sent earlier, logged later', '2026-03-02T15:00:02Z');
    const another = received(other, 'from another number', '2026-03-02T15:00:00Z');
    await intakeBatch(deps, 'account', 0, [latest, earlier, another]);

    expect(await queuedBodies(phone)).toEqual(['sent earlier, logged later', 'the latest one']);
    expect(await turnOf(phone)).toEqual({
      due_at: new Date('2026-03-02T15:00:06Z'),
      // The turn answers the burst as caused by the last message the log brought.
      causation_id: earlier.event!.id,
    });
    expect(await turnOf(other)).toEqual({
      due_at: new Date('2026-03-02T15:00:01Z'),
      causation_id: another.event!.id,
    });

    // A later batch with an older message does not bring the queued turn forward, but names it the cause.
    const late = received(phone, 'delivered late', '2026-03-02T15:00:01Z');
    await intakeBatch(deps, 'account', 0, [late]);
    expect(await turnOf(phone)).toEqual({
      due_at: new Date('2026-03-02T15:00:06Z'),
      causation_id: late.event!.id,
    });
    expect(await queuedBodies(phone)).toHaveLength(3);
  });
});
