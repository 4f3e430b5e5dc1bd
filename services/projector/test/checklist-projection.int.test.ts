import type { DomainEvent, EventData, EventType } from '@leadline/events';
import { connectInfrastructure, newUuid, type Infrastructure } from '@leadline/runtime';
import { createTestEnvironment, type TestEnvironment } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiProjection } from '../src/ai/projection';
import { checklistProjection } from '../src/checklist/projection';

let env: TestEnvironment;
let infrastructure: Infrastructure;

beforeAll(async () => {
  env = await createTestEnvironment();
  infrastructure = await connectInfrastructure(env.config, 'leadline-checklist-projection-test');
});
afterAll(async () => {
  await infrastructure?.close();
  await env?.dispose();
});

function accountEvent<T extends EventType>(type: T, accountId: string, data: EventData<T>, second: number) {
  return {
    id: newUuid(),
    type,
    version: 1,
    account_id: accountId,
    partner_id: 'partner-1',
    occurred_at: new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString(),
    actor: { kind: 'system', service: 'test' },
    correlation_id: 'test',
    causation_id: null,
    data,
  } as DomainEvent;
}

const apply = (events: DomainEvent[]) =>
  infrastructure.db.transaction().execute(async (trx) => {
    await checklistProjection.apply(
      trx,
      events.filter((event) => checklistProjection.handles.has(event.type)),
    );
    await aiProjection.apply(
      trx,
      events.filter((event) => aiProjection.handles.has(event.type)),
    );
  });

describe('the checklist and AI projections', () => {
  it('record collected items and count each document once, however often they are applied', async () => {
    const accountId = newUuid();
    const base = {
      lead_id: 'lead-1',
      phone: '+15125550123',
      lead_name: null,
      message_id: 'm1',
      checklist_progress: 0.5,
      completed_items: 1,
      total_items: 2,
    };
    const events = [
      accountEvent(
        'checklist.item_collected',
        accountId,
        {
          ...base,
          requirement_id: 'r-email',
          requirement_name: 'Email',
          requirement_type: 'email',
          value: 'ana@example.com',
          document: null,
        },
        1,
      ),
      accountEvent(
        'checklist.item_collected',
        accountId,
        {
          ...base,
          requirement_id: 'r-id',
          requirement_name: 'ID',
          requirement_type: 'document',
          value: null,
          document: { document_id: 'doc-1', content_type: 'image/png', file_size: 3 },
        },
        2,
      ),
      accountEvent(
        'ai.turn_completed',
        accountId,
        {
          phone: '+15125550123',
          message_ids: ['m1', 'm2'],
          sequence_step: null,
          outcome: 'replied',
          reason: null,
          reply_message_id: 'r1',
          summary: 'Collected: Email.',
          responder: 'offline',
        },
        3,
      ),
    ];
    await apply(events);
    await apply(events);

    const items = await infrastructure.db
      .selectFrom('lead_checklist_items')
      .select(['requirement_id', 'value', 'document_id'])
      .where('account_id', '=', accountId)
      .orderBy('requirement_id')
      .execute();
    expect(items).toEqual([
      { requirement_id: 'r-email', value: 'ana@example.com', document_id: null },
      { requirement_id: 'r-id', value: null, document_id: 'doc-1' },
    ]);
    const usage = await infrastructure.db
      .selectFrom('usage_counters')
      .select('documents_collected')
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    expect(usage.documents_collected).toBe(1);
    const turns = await infrastructure.db
      .selectFrom('ai_handled_turns')
      .select('turn_key')
      .where('account_id', '=', accountId)
      .orderBy('turn_key')
      .execute();
    expect(turns.map((turn) => turn.turn_key)).toEqual(['message:m1', 'message:m2']);
  });
});
