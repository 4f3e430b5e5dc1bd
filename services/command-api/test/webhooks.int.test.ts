import { newUuid } from '@leadline/runtime';
import { eventually } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

let system: TestSystem;
let acme: PartnerClient;
let other: PartnerClient;

beforeAll(async () => {
  system = await startSystem();
  acme = partnerClient(system.app, await system.createPartner('Acme CRM'));
  other = partnerClient(system.app, await system.createPartner('Other CRM'));
});
afterAll(() => system?.close());

const SECRET = 'whsec_never_shown_0123456789';
const valid = { url: 'https://crm.example.com/hooks/leadline', events: ['lead.created'], secret: SECRET };

/** Every record on the partner topic, raw: the secret must not be in any of them. */
async function partnerLogBytes(): Promise<{ records: number; text: string }> {
  const { kafka, topics, admin } = system.services;
  const offsets = await admin.fetchTopicOffsets(topics.partner);
  const records = offsets.reduce((sum, entry) => sum + Number(entry.high), 0);
  const consumer = kafka.consumer({ groupId: `${system.env.config.TOPIC_PREFIX}raw-${Date.now()}` });
  const values: string[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic: topics.partner, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => void values.push(message.value!.toString('latin1')),
  });
  try {
    await eventually(async () => (values.length >= records ? true : undefined));
  } finally {
    await consumer.disconnect();
  }
  return { records: values.length, text: values.join('\n') };
}

async function partnerLogSize() {
  const offsets = await system.services.admin.fetchTopicOffsets(system.services.topics.partner);
  return offsets.reduce((sum, entry) => sum + Number(entry.high), 0);
}

describe('webhook management', () => {
  it('creates a webhook that lists at once, returns the spec fields only, and never the secret', async () => {
    const created = await acme.post('/webhooks', {
      ...valid,
      events: ['lead.created', 'lead.status_changed', 'lead.created'],
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      url: valid.url,
      events: ['lead.created', 'lead.status_changed'],
      active: true,
      created_at: expect.any(String),
    });
    const listed = await acme.get('/webhooks');
    expect(listed.body.webhooks).toEqual([created.body]);
    expect(JSON.stringify(listed.body)).not.toContain(SECRET);

    const stored = await system.services.db.selectFrom('webhooks').selectAll().execute();
    expect(JSON.stringify(stored)).not.toContain(SECRET);
    expect(stored[0]!.secret_ciphertext).toMatch(/^v2\./);
    const log = await partnerLogBytes();
    expect(log.text).toContain(created.body.id);
    expect(log.text).not.toContain(SECRET);
  });

  it.each([
    ['an http URL', { ...valid, url: 'http://crm.example.com/hooks' }, 'body.url'],
    ['a URL with credentials', { ...valid, url: 'https://user:pw@crm.example.com/hooks' }, 'body.url'],
    ['no events', { ...valid, events: [] }, 'body.events'],
    ['an unknown event', { ...valid, events: ['lead.created', 'lead.exploded'] }, 'body.events.1'],
    ['webhook.delivery_failed', { ...valid, events: ['webhook.delivery_failed'] }, 'body.events.0'],
    ['no secret', { url: valid.url, events: valid.events }, 'body.secret'],
    ['a short secret', { ...valid, secret: 'short' }, 'body.secret'],
    ['no url', { events: valid.events, secret: SECRET }, 'body.url'],
    // Not a create field: refused by name rather than dropped (which would create an active webhook).
    ['an unknown field', { ...valid, active: false }, 'body.active'],
  ])('answers %s with a 400 problem and writes nothing', async (_case, body, field) => {
    const before = await partnerLogSize();
    const response = await acme.post('/webhooks', body);
    expect(response.status).toBe(400);
    expect(response.headers['content-type']).toContain('application/problem+json');
    expect(response.body.code).toBe('validation_failed');
    expect(response.body.errors.map((error: { field: string }) => error.field)).toContain(field);
    expect(await partnerLogSize()).toBe(before);
  });

  it('updates any subset, answers the whole webhook, and keeps the secret', async () => {
    const { body: webhook } = await acme.post('/webhooks', valid);
    const patched = await acme.patch(`/webhooks/${webhook.id}`, {
      events: ['checklist.completed', 'sequence.completed'],
      active: false,
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toEqual({
      ...webhook,
      events: ['checklist.completed', 'sequence.completed'],
      active: false,
    });
    const moved = await acme.patch(`/webhooks/${webhook.id}`, { url: 'https://new.example.com/in' });
    expect(moved.body).toMatchObject({ url: 'https://new.example.com/in', active: false });
    const before = await partnerLogSize();
    expect((await acme.patch(`/webhooks/${webhook.id}`, { active: false })).status).toBe(200);
    expect(await partnerLogSize()).toBe(before);
    for (const body of [
      { secret: 'a-new-secret-0123456789' },
      { url: 'ftp://x.example.com' },
      { events: [] },
    ]) {
      expect((await acme.patch(`/webhooks/${webhook.id}`, body)).status).toBe(400);
    }
  });

  it('deletes a webhook: it no longer lists and a second delete is a 404', async () => {
    const { body: webhook } = await acme.post('/webhooks', valid);
    const deleted = await acme.delete(`/webhooks/${webhook.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ success: true, deleted: true });
    const { body } = await acme.get('/webhooks');
    expect(body.webhooks.map((listed: { id: string }) => listed.id)).not.toContain(webhook.id);
    expect((await acme.delete(`/webhooks/${webhook.id}`)).status).toBe(404);
  });

  it("answers 404 on every webhook route for another partner's webhook and changes nothing", async () => {
    const { body: webhook } = await acme.post('/webhooks', valid);
    const before = await partnerLogSize();
    const attempts = await Promise.all([
      other.patch(`/webhooks/${webhook.id}`, { active: false }),
      other.delete(`/webhooks/${webhook.id}`),
      other.get(`/webhooks/${webhook.id}/deliveries`),
      other.post(`/webhooks/${webhook.id}/test`),
      other.post(`/webhooks/${webhook.id}/deliveries/${newUuid()}/retry`),
    ]);
    for (const response of attempts) {
      expect(response.status).toBe(404);
      expect(response.body.code).toBe('webhook_not_found');
    }
    expect((await other.get('/webhooks')).body.webhooks).toEqual([]);
    expect(await partnerLogSize()).toBe(before);
    expect((await acme.get('/webhooks')).body.webhooks).toContainEqual(webhook);
  });

  it('holds at most 20 webhooks per partner, even under concurrent creates', async () => {
    const crowded = partnerClient(system.app, await system.createPartner('Crowded CRM'));
    const responses = await Promise.all(Array.from({ length: 25 }, () => crowded.post('/webhooks', valid)));
    expect(responses.filter((response) => response.status === 201)).toHaveLength(20);
    const refused = responses.filter((response) => response.status !== 201);
    expect(refused.map((response) => [response.status, response.body.code])).toEqual(
      Array(5).fill([409, 'webhook_limit_reached']),
    );
    expect((await crowded.get('/webhooks')).body.webhooks).toHaveLength(20);
    // Deleting one frees a place.
    const [first] = (await crowded.get('/webhooks')).body.webhooks;
    await crowded.delete(`/webhooks/${first.id}`);
    expect((await crowded.post('/webhooks', valid)).status).toBe(201);
  });

  it('refuses a test event for an inactive webhook and lists deliveries with the spec pagination', async () => {
    const { body: webhook } = await acme.post('/webhooks', valid);
    await acme.patch(`/webhooks/${webhook.id}`, { active: false });
    const refused = await acme.post(`/webhooks/${webhook.id}/test`);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('webhook_inactive');
    const log = await acme.get(`/webhooks/${webhook.id}/deliveries`);
    expect(log.body).toEqual({ deliveries: [], total: 0, limit: 50, offset: 0 });
    for (const query of ['limit=0', 'limit=251', 'offset=-1', 'status=lost']) {
      expect((await acme.get(`/webhooks/${webhook.id}/deliveries?${query}`)).status, query).toBe(400);
    }
  });

  it('documents the thirteen webhook events and the test event with their JSON Schemas', async () => {
    const document = (await system.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
    expect(Object.keys(document.webhooks).sort()).toEqual(
      [
        'account.erased',
        'checklist.completed',
        'compliance.status_changed',
        'checklist.item_collected',
        'conversation.handoff_requested',
        'conversation.reply_received',
        'conversation.started',
        'lead.created',
        'lead.erased',
        'lead.status_changed',
        'message.held',
        'sequence.completed',
        'sequence.reply_received',
        'webhook.test',
      ].sort(),
    );
    const { $ref } =
      document.webhooks['lead.status_changed'].post.requestBody.content['application/json'].schema;
    expect($ref).toBe('#/components/schemas/LeadStatusChangedEvent');
    const schema = document.components.schemas.LeadStatusChangedEvent;
    expect(schema.required).toEqual(['id', 'type', 'account_id', 'created_at', 'data']);
    // The payload's data is a named schema of its own, so client generators invent no name for it.
    expect(schema.properties.data.$ref).toBe('#/components/schemas/LeadStatusChangedEventData');
    const data = document.components.schemas.LeadStatusChangedEventData;
    expect(data.required).toEqual(['phone', 'lead_name', 'previous_status', 'new_status']);
    expect(data.additionalProperties).toBe(false);
  });
});
