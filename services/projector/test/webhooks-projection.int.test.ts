import type { DomainEvent, EventData, EventType } from '@leadline/events';
import { connectInfrastructure, newUuid, type Infrastructure } from '@leadline/runtime';
import { createTestEnvironment, type TestEnvironment } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhooksProjection } from '../src/webhooks/projection';

let env: TestEnvironment;
let infrastructure: Infrastructure;

beforeAll(async () => {
  env = await createTestEnvironment();
  infrastructure = await connectInfrastructure(env.config, 'leadline-webhooks-projection-test');
});
afterAll(async () => {
  await infrastructure?.close();
  await env?.dispose();
});

function partnerEvent<T extends EventType>(type: T, partnerId: string, data: EventData<T>, second: number) {
  return {
    id: newUuid(),
    type,
    version: 1,
    account_id: null,
    partner_id: partnerId,
    occurred_at: new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString(),
    actor: { kind: 'system', service: 'test' },
    correlation_id: 'test',
    causation_id: null,
    data,
  } as DomainEvent;
}

const apply = (events: DomainEvent[]) =>
  infrastructure.db.transaction().execute((trx) => webhooksProjection.apply(trx, events));
const rowsOf = (partnerId: string) =>
  infrastructure.db
    .selectFrom('webhooks')
    .selectAll()
    .where('partner_id', '=', partnerId)
    .orderBy('id')
    .execute();

describe('the webhooks projection', () => {
  it('builds the webhook list, and applying the same events twice changes nothing', async () => {
    const partnerId = newUuid();
    const [kept, disabled, deleted] = [newUuid(), newUuid(), newUuid()];
    const created = (webhookId: string, second: number) =>
      partnerEvent(
        'webhook.created',
        partnerId,
        {
          webhook_id: webhookId,
          url: `https://x.example.com/${webhookId}`,
          events: ['lead.created'],
          secret_ciphertext: 'v1.a.b.c',
        },
        second,
      );
    const events = [
      created(kept, 1),
      created(disabled, 2),
      created(deleted, 3),
      partnerEvent(
        'webhook.updated',
        partnerId,
        { webhook_id: kept, changes: { events: ['lead.status_changed'], active: false } },
        4,
      ),
      partnerEvent('webhook.updated', partnerId, { webhook_id: kept, changes: { active: true } }, 5),
      partnerEvent(
        'webhook.disabled',
        partnerId,
        { webhook_id: disabled, reason: 'gone', delivery_id: 'd', status_code: 410 },
        6,
      ),
      partnerEvent('webhook.deleted', partnerId, { webhook_id: deleted }, 7),
    ];
    await apply(events);
    const once = await rowsOf(partnerId);
    expect(once.map((row) => [row.id, row.active, row.events, row.disabled_reason])).toEqual(
      [
        [kept, true, ['lead.status_changed'], null],
        [disabled, false, ['lead.created'], 'gone'],
      ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    );
    await apply(events);
    expect(await rowsOf(partnerId)).toEqual(once);
  });

  it("never touches another partner's webhook", async () => {
    const owner = newUuid();
    const webhookId = newUuid();
    await apply([
      partnerEvent(
        'webhook.created',
        owner,
        {
          webhook_id: webhookId,
          url: 'https://x.example.com',
          events: ['lead.created'],
          secret_ciphertext: 'v1.a.b.c',
        },
        1,
      ),
      partnerEvent('webhook.updated', newUuid(), { webhook_id: webhookId, changes: { active: false } }, 2),
      partnerEvent('webhook.deleted', newUuid(), { webhook_id: webhookId }, 3),
    ]);
    expect((await rowsOf(owner)).map((row) => row.active)).toEqual([true]);
  });
});
