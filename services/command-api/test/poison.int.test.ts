import { eventCatalog, UnstorableTextError, type DomainEvent } from '@leadline/events';
import { listParked } from '@leadline/runtime';
import { eventually, logSize, startFakeTwilio, twilioSignature, type FakeTwilio } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

let system: TestSystem;
let twilio: FakeTwilio;
let partner: PartnerClient;
let key: string;
let account: { id: string; number: string };
const LEAD = '+15125550100';
let requirementId: string;
let webhookId: string;

beforeAll(async () => {
  twilio = await startFakeTwilio();
  system = await startSystem({ twilio });
  key = await system.createPartner('Poison CRM');
  partner = partnerClient(system.app, key);
  const created = await partner.post('/accounts', { name: 'Target' });
  account = { id: created.body.id, number: created.body.phone_number };
  await partner.post(`/accounts/${account.id}/leads`, { phone: LEAD, name: 'Ana' });
  requirementId = (
    await partner.post(`/accounts/${account.id}/requirements`, { name: 'Paystub', type: 'document' })
  ).body.id;
  webhookId = (
    await partner.post('/webhooks', {
      url: 'https://crm.example.com/hooks',
      events: ['lead.created'],
      secret: 'a-secret-of-sixteen-chars',
    })
  ).body.id;
});
afterAll(async () => {
  await system?.close();
  await twilio?.close();
});

/** Strings no projection can store: refused at the edge with a 400 naming the field. */
const unstorable = {
  nul: 'x\u0000y',
  'lone high surrogate': 'x\ud800y',
  'lone low surrogate': '\udc00',
};

/** Strings that are odd but valid Unicode: accepted (or refused by the field's own rules), never a 500. */
const odd = {
  bom: '\ufeffAna',
  emoji: 'Ana 😀👍🏽👨‍👩‍👧',
  'right-to-left marks': '\u202eanA\u200f \u05e9\u05dc\u05d5\u05dd',
  'replacement of invalid UTF-8': 'Ana \ufffd',
  'two megabytes': 'a'.repeat(2 * 1024 * 1024),
};

/**
 * A string as it can arrive in a URL: a lone surrogate has no UTF-8 form, so a client can only send
 * the bytes of one (`%ED%A0%80`), which the server decodes as U+FFFD.
 */
const inPath = (s: string) =>
  (s as unknown as { isWellFormed(): boolean }).isWellFormed() ? encodeURIComponent(s) : '%ED%A0%80';

type Write = { method: 'POST' | 'PATCH' | 'DELETE'; path: string; body?: unknown };

/** Every partner write route, with the given string in one of its text fields. */
const writes = (s: string): [string, Write][] => [
  ['create account name', { method: 'POST', path: '/accounts', body: { name: s } }],
  [
    'create account metadata value',
    { method: 'POST', path: '/accounts', body: { name: 'M', metadata: { note: s } } },
  ],
  [
    'create account metadata key',
    { method: 'POST', path: '/accounts', body: { name: 'M', metadata: { [s]: 1 } } },
  ],
  ['update account name', { method: 'PATCH', path: `/accounts/${account.id}`, body: { name: s } }],
  [
    'update account nested metadata',
    { method: 'PATCH', path: `/accounts/${account.id}`, body: { metadata: { deep: [{ note: s }] } } },
  ],
  [
    'invite team member',
    {
      method: 'POST',
      path: `/accounts/${account.id}/team/invite`,
      body: { email: 'a@example.com', name: s, role: 'member' },
    },
  ],
  [
    'import lead name',
    { method: 'POST', path: `/accounts/${account.id}/leads`, body: { phone: '+15125550111', name: s } },
  ],
  [
    'import lead metadata',
    {
      method: 'POST',
      path: `/accounts/${account.id}/leads`,
      body: { phone: '+15125550112', metadata: { k: s } },
    },
  ],
  [
    'bulk import',
    {
      method: 'POST',
      path: `/accounts/${account.id}/leads/bulk`,
      body: { leads: [{ phone: '+15125550113', name: s }] },
    },
  ],
  ['update lead', { method: 'PATCH', path: `/accounts/${account.id}/leads/${LEAD}`, body: { notes: s } }],
  [
    'create requirement',
    { method: 'POST', path: `/accounts/${account.id}/requirements`, body: { name: s, type: 'text' } },
  ],
  [
    'update requirement',
    {
      method: 'PATCH',
      path: `/accounts/${account.id}/requirements/${requirementId}`,
      body: { description: s },
    },
  ],
  [
    'send message',
    { method: 'POST', path: `/accounts/${account.id}/conversations/${LEAD}/messages`, body: { body: s } },
  ],
  [
    'create webhook',
    {
      method: 'POST',
      path: '/webhooks',
      body: { url: `https://crm.example.com/${s}`, events: ['lead.created'], secret: `${s}-sixteen-chars!` },
    },
  ],
  ['update webhook', { method: 'PATCH', path: `/webhooks/${webhookId}`, body: { url: s } }],
  ['path id', { method: 'PATCH', path: `/accounts/${inPath(s)}`, body: { name: 'x' } }],
  ['path id of a delete', { method: 'DELETE', path: `/webhooks/${inPath(s)}` }],
  ['lead phone in the path', { method: 'DELETE', path: `/accounts/${account.id}/leads/${inPath(s)}` }],
];

const send = async ({ method, path, body }: Write) =>
  method === 'POST'
    ? partner.post(path, body)
    : method === 'PATCH'
      ? partner.patch(path, body)
      : partner.delete(path);

describe('strings no projection can store', () => {
  for (const [label, value] of Object.entries(unstorable)) {
    it(`${label}: every write route answers 400 naming the field and writes nothing`, async () => {
      for (const [route, write] of writes(value)) {
        const before = await logSize(system.services);
        const response = await send(write);
        expect(response.headers['content-type']).toContain('application/problem+json');
        expect(await logSize(system.services)).toBe(before);
        if (write.body === undefined || route.includes('path')) {
          // In a URL, a NUL is refused; the bytes of a surrogate read as U+FFFD, which names nothing.
          expect([400, 404]).toContain(response.status);
        } else {
          expect({ route, status: response.status }).toEqual({ route, status: 400 });
          expect(response.body.code).toBe('validation_failed');
          expect(response.body.errors[0].field).toMatch(/^(body|params|querystring)\./);
        }
      }
    });

    it(`${label}: in a path id or a query value of a read, never a 500`, async () => {
      const encoded = inPath(value);
      for (const path of [
        `/accounts/${encoded}`,
        `/accounts/${account.id}/leads?search=${encoded}`,
        `/accounts/${account.id}/leads?source=${encoded}`,
        `/usage?account_id=${encoded}`,
        `/webhooks/${encoded}/deliveries`,
        `/accounts/${account.id}/leads/${encoded}`,
      ]) {
        const response = await partner.get(path);
        if (value.includes('\u0000')) {
          expect({ path, status: response.status }).toEqual({ path, status: 400 });
          expect(response.body.errors[0].message).toMatch(/NUL/);
        } else {
          // The bytes of a surrogate decode as U+FFFD: a search for it is an ordinary search.
          expect(response.status).toBeLessThan(500);
        }
        if (response.status >= 400)
          expect(response.headers['content-type']).toContain('application/problem+json');
      }
    });
  }

  it('names the exact field, at any depth, keys included', async () => {
    const response = await partner.patch(`/accounts/${account.id}`, {
      metadata: { outer: { list: ['fine', 'bad\u0000'] } },
    });
    expect(response.body.errors).toEqual([
      { field: 'body.metadata.outer.list.1', message: 'Must not contain the NUL character (U+0000).' },
    ]);
  });
});

describe('the event log', () => {
  it('the codec refuses such text for every event type, in the envelope or the data', async () => {
    for (const definition of eventCatalog) {
      for (const value of Object.values(unstorable)) {
        const event = {
          id: '0198e0c4-1a2b-7c3d-8e4f-5a6b7c8d9e0f',
          type: definition.type,
          version: definition.version,
          account_id: definition.topic === 'account' ? 'account' : null,
          partner_id: 'partner',
          occurred_at: '2026-03-01T12:00:00.000Z',
          actor: { kind: 'system', service: 'test' },
          correlation_id: 'c',
          causation_id: null,
          data: { note: value },
        } as unknown as DomainEvent;
        await expect(system.services.codec.encode(event)).rejects.toBeInstanceOf(UnstorableTextError);
        await expect(
          system.services.codec.encode({ ...event, data: {}, correlation_id: value } as DomainEvent),
        ).rejects.toBeInstanceOf(UnstorableTextError);
      }
    }
  });

  it('refuses to append an event of any type carrying such text: a 400 from the command bus, nothing written', async () => {
    const before = await logSize(system.services);
    const appended = system.services.commands.append({
      stream: { topic: 'account', accountId: account.id },
      context: { partnerId: 'p', actor: { kind: 'system', service: 'test' }, correlationId: 'c' },
      events: [{ type: 'lead.deleted', data: { lead_id: 'lead', phone: '+1512\u0000' } }],
    });
    await expect(appended).rejects.toMatchObject({
      status: 400,
      code: 'validation_failed',
      details: { errors: [{ field: 'data.phone', message: expect.stringMatching(/NUL/) }] },
    });
    expect(await logSize(system.services)).toBe(before);
  });
});

describe('odd but valid text', () => {
  for (const [label, value] of Object.entries(odd)) {
    it(`${label}: every write route answers without a 500, and what was accepted reads back`, async () => {
      for (const [route, write] of writes(value)) {
        const before = await logSize(system.services);
        const response = await send(write);
        expect({ route, status: response.status }).not.toEqual({ route, status: 500 });
        if (response.status >= 400) {
          expect(response.headers['content-type']).toContain('application/problem+json');
          expect(await logSize(system.services)).toBe(before);
        }
      }
    });
  }

  it('stores emoji, marks and a BOM exactly', async () => {
    for (const [index, value] of [odd.bom, odd.emoji, odd['right-to-left marks']].entries()) {
      const phone = `+1512555020${index}`;
      expect((await partner.post(`/accounts/${account.id}/leads`, { phone, name: value })).status).toBe(201);
      expect((await partner.get(`/accounts/${account.id}/leads/${phone}`)).body.name).toBe(value.trim());
    }
  });

  it('refuses deep nesting with a 4xx, not a crash', async () => {
    const depth = 100_000;
    const response = await system.app.inject({
      method: 'PATCH',
      url: `/v1/accounts/${account.id}`,
      headers: { 'x-partner-key': key, 'content-type': 'application/json' },
      payload: `{"metadata":{"nested":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}}`,
    });
    expect(response.statusCode).toBeGreaterThanOrEqual(400);
    expect(response.statusCode).toBeLessThan(500);
    expect(response.headers['content-type']).toContain('application/problem+json');
  });

  it('refuses bytes that are not UTF-8 with a 400, writing nothing', async () => {
    const before = await logSize(system.services);
    const payload = Buffer.concat([
      Buffer.from(`{"phone":"+15125550299","name":"Ana `),
      Buffer.from([0xff, 0xc3, 0x28]),
      Buffer.from('"}'),
    ]);
    const response = await system.app.inject({
      method: 'POST',
      url: `/v1/accounts/${account.id}/leads`,
      headers: { 'x-partner-key': key, 'content-type': 'application/json' },
      payload,
    });
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toContain('application/problem+json');
    expect(await logSize(system.services)).toBe(before);
  });
});

describe("fastify's own errors", () => {
  it('are problem+json: malformed JSON, another media type, a malformed content type, an overlong path parameter', async () => {
    const requests = [
      { 'content-type': 'application/json', payload: '{"name":' },
      { 'content-type': 'text/plain', payload: 'name' },
      { 'content-type': 'application/json; charset', payload: '{}' },
      { 'content-type': '', payload: '{}' },
    ];
    for (const { payload, ...headers } of requests) {
      const response = await system.app.inject({
        method: 'POST',
        url: '/v1/accounts',
        headers: { 'x-partner-key': key, ...headers },
        payload,
      });
      expect(response.statusCode).toBeGreaterThanOrEqual(400);
      expect(response.statusCode).toBeLessThan(500);
      expect(response.headers['content-type']).toContain('application/problem+json');
    }
    const long = await partner.get(`/accounts/${'a'.repeat(5000)}`);
    expect(long.status).toBe(414);
    expect(long.body.code).toBe('uri_too_long');
  });
});

describe('text from phones', () => {
  it('cleans an inbound SMS instead of refusing it: NUL removed, lone surrogates replaced', async () => {
    const params = {
      MessageSid: 'SM00000000000000000000000000000099',
      AccountSid: twilio.accountSid,
      From: '+15125550177',
      To: account.number,
      Body: 'a\u0000b \ud800 c',
      NumMedia: '0',
    };
    const url = `${system.publicUrl}/twilio/sms`;
    const response = await system.app.inject({
      method: 'POST',
      url: '/twilio/sms',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': twilioSignature(twilio.authToken, url, params),
      },
      payload: new URLSearchParams(params).toString(),
    });
    expect(response.statusCode).toBe(200);
    const messages = await partner.get(`/accounts/${account.id}/conversations/%2B15125550177/messages`);
    expect(messages.body.messages[0].body).toBe('ab \ufffd c');
  });

  it('never answers 500 to any string of the corpus in any field, and stores what it accepts', async () => {
    let sid = 1000;
    for (const [label, value] of Object.entries({ ...unstorable, ...odd })) {
      for (const field of ['Body', 'From', 'MediaUrl0']) {
        const params: Record<string, string> = {
          MessageSid: `SM${String(++sid).padStart(32, '0')}`,
          AccountSid: twilio.accountSid,
          From: '+15125550178',
          To: account.number,
          Body: 'hello',
          NumMedia: field === 'MediaUrl0' ? '1' : '0',
          MediaUrl0: 'https://media.example.com/1',
        };
        params[field] = value;
        const url = `${system.publicUrl}/twilio/sms`;
        const response = await system.app.inject({
          method: 'POST',
          url: '/twilio/sms',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            'x-twilio-signature': twilioSignature(twilio.authToken, url, params),
          },
          payload: new URLSearchParams(params).toString(),
        });
        expect({ label, field, status: response.statusCode }).not.toMatchObject({ status: 500 });
      }
    }
    await expectEveryCheckpointAtTheEnd();
  });

  it('answers a status callback whose ids carry NUL with a 404, not a 500', async () => {
    const params = { MessageSid: 'SM\u0000', MessageStatus: 'delivered' };
    const url = `${system.publicUrl}/twilio/status?message_id=x%00`;
    const response = await system.app.inject({
      method: 'POST',
      url: '/twilio/status?message_id=x%00',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': twilioSignature(twilio.authToken, url, params),
      },
      payload: new URLSearchParams(params).toString(),
    });
    expect(response.statusCode).toBe(404);
  });
});

describe('afterwards', () => {
  it("every partition's checkpoint reaches its high watermark: nothing stopped the log", async () => {
    await expectEveryCheckpointAtTheEnd();
  });
});

async function expectEveryCheckpointAtTheEnd() {
  for (const topic of Object.values(system.services.topics)) {
    for (const { partition, high } of await system.services.admin.fetchTopicOffsets(topic)) {
      await eventually(
        async () => {
          const row = await system.services.db
            .selectFrom('projection_checkpoints')
            .select('next_offset')
            .where('topic', '=', topic)
            .where('partition', '=', partition)
            .executeTakeFirst();
          return BigInt(row?.next_offset ?? '0') >= BigInt(high) ? true : undefined;
        },
        { message: `${topic}[${partition}] stuck below ${high}` },
      );
    }
  }
  expect(await listParked(system.services.db)).toEqual([]);
}
