import { describe, expect, it } from 'vitest';
import { decideWebhooks, MAX_WEBHOOKS_PER_PARTNER, type Webhook } from './decide';

const webhook = (id: string, overrides: Partial<Webhook> = {}): Webhook => ({
  id,
  url: `https://hooks.example.com/${id}`,
  events: ['lead.created'],
  active: true,
  ...overrides,
});
const given = (...webhooks: Webhook[]) => ({ webhooks });

describe('the webhooks decider', () => {
  it('creates a webhook with its subscriptions as a set and only the sealed secret', () => {
    expect(
      decideWebhooks(
        {
          type: 'CreateWebhook',
          webhook_id: 'wh-1',
          url: 'https://hooks.example.com/in',
          events: ['lead.created', 'lead.status_changed', 'lead.created'],
          secret_ciphertext: 'v1.sealed',
        },
        given(),
      ),
    ).toEqual([
      {
        type: 'webhook.created',
        data: {
          webhook_id: 'wh-1',
          url: 'https://hooks.example.com/in',
          events: ['lead.created', 'lead.status_changed'],
          secret_ciphertext: 'v1.sealed',
        },
      },
    ]);
  });

  it(`refuses a webhook beyond ${MAX_WEBHOOKS_PER_PARTNER} per partner, inactive ones included`, () => {
    const full = Array.from({ length: MAX_WEBHOOKS_PER_PARTNER }, (_, i) =>
      webhook(`wh-${i}`, { active: i % 2 === 0 }),
    );
    const create = {
      type: 'CreateWebhook' as const,
      webhook_id: 'one-too-many',
      url: 'https://hooks.example.com/x',
      events: ['lead.created' as const],
      secret_ciphertext: 'v1.sealed',
    };
    expect(() => decideWebhooks(create, given(...full))).toThrow(
      expect.objectContaining({ status: 409, code: 'webhook_limit_reached' }),
    );
    expect(decideWebhooks(create, given(...full.slice(1)))).toHaveLength(1);
  });

  it('updates only what changed, and nothing when nothing differs', () => {
    const state = given(webhook('wh-1', { events: ['lead.created', 'checklist.completed'] }));
    expect(
      decideWebhooks(
        {
          type: 'UpdateWebhook',
          webhook_id: 'wh-1',
          url: 'https://hooks.example.com/wh-1',
          events: ['checklist.completed', 'lead.created'],
          active: false,
        },
        state,
      ),
    ).toEqual([{ type: 'webhook.updated', data: { webhook_id: 'wh-1', changes: { active: false } } }]);
    expect(decideWebhooks({ type: 'UpdateWebhook', webhook_id: 'wh-1', active: true }, state)).toEqual([]);
  });

  it('re-enables a disabled webhook through active: true', () => {
    expect(
      decideWebhooks(
        { type: 'UpdateWebhook', webhook_id: 'wh-1', active: true },
        given(webhook('wh-1', { active: false })),
      ),
    ).toEqual([{ type: 'webhook.updated', data: { webhook_id: 'wh-1', changes: { active: true } } }]);
  });

  it('answers 404 for a webhook the partner does not have', () => {
    for (const command of [
      { type: 'UpdateWebhook' as const, webhook_id: 'elsewhere', active: false },
      { type: 'DeleteWebhook' as const, webhook_id: 'elsewhere' },
    ]) {
      expect(() => decideWebhooks(command, given(webhook('wh-1')))).toThrow(
        expect.objectContaining({ status: 404, code: 'webhook_not_found' }),
      );
    }
    expect(decideWebhooks({ type: 'DeleteWebhook', webhook_id: 'wh-1' }, given(webhook('wh-1')))).toEqual([
      { type: 'webhook.deleted', data: { webhook_id: 'wh-1' } },
    ]);
  });
});
