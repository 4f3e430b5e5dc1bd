import { eventually, fakeClock, startFakeTwilio, type FakeTwilio } from '@leadline/test-kit';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

let system: TestSystem;
let twilio: FakeTwilio;
let acmeKey: string;
let otherKey: string;
let acme: PartnerClient;
const clock = fakeClock();

beforeAll(async () => {
  twilio = await startFakeTwilio();
  system = await startSystem({ clock, twilio, gateway: true });
  acmeKey = await system.createPartner('Acme CRM');
  otherKey = await system.createPartner('Other CRM');
  acme = partnerClient(system.app, acmeKey);
});
afterAll(async () => {
  await system?.close();
  await twilio?.close();
});

/** A request as a partner's backend sends it, with its raw answer. */
async function send(
  key: string,
  method: 'POST' | 'PATCH',
  path: string,
  body: unknown,
  idempotencyKey?: string,
) {
  const response = await system.app.inject({
    method,
    url: `/v1${path}`,
    headers: {
      'x-partner-key': key,
      'content-type': 'application/json',
      ...(idempotencyKey !== undefined && { 'idempotency-key': idempotencyKey }),
    },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return {
    status: response.statusCode,
    headers: response.headers,
    raw: response.body,
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- assertions read any field
    body: (response.body ? response.json() : undefined) as any,
  };
}

async function newAccountWithLead(key: string, phone: string) {
  const account = await send(key, 'POST', '/accounts', { name: 'Sunrise Mortgage' });
  expect(account.status).toBe(201);
  const lead = await send(key, 'POST', `/accounts/${account.body.id}/leads`, { phone, name: 'Ben Ortiz' });
  expect(lead.status).toBe(201);
  return account.body.id as string;
}

const textsTo = (phone: string) => twilio.messages.filter((message) => message.to === phone);

describe('Idempotency-Key', () => {
  it('sends exactly one SMS for 20 concurrent identical requests with one key, and replays its answer', async () => {
    const phone = '+15125550401';
    const accountId = await newAccountWithLead(acmeKey, phone);
    const path = `/accounts/${accountId}/conversations/${encodeURIComponent(phone)}/messages`;
    const body = { body: 'Hi Ben, your rate lock is ready.', sender_name: 'Maria' };

    const answers = await Promise.all(
      Array.from({ length: 20 }, () => send(acmeKey, 'POST', path, body, 'send-rate-lock-1')),
    );
    // One ran; each of the others was told the first still runs, or got its stored answer.
    const ran = answers.filter((answer) => answer.status === 200 && !answer.headers['idempotent-replayed']);
    expect(ran).toHaveLength(1);
    for (const answer of answers.filter((a) => a !== ran[0])) {
      if (answer.status === 409) expect(answer.body.code).toBe('idempotency_key_in_progress');
      else expect(answer.raw).toBe(ran[0]!.raw);
    }

    // A retry after the fact, with the fields in another order, gets the same answer byte for byte.
    const replay = await send(
      acmeKey,
      'POST',
      path,
      `{"sender_name":"Maria","body":"Hi Ben, your rate lock is ready."}`,
      'send-rate-lock-1',
    );
    expect(replay.status).toBe(200);
    expect(replay.raw).toBe(ran[0]!.raw);
    expect(replay.headers['content-type']).toBe(ran[0]!.headers['content-type']);
    expect(replay.headers['idempotent-replayed']).toBe('true');

    await eventually(async () => (textsTo(phone).length > 0 ? true : undefined));
    const sent = await eventually(async () => {
      const row = await system.services.db
        .selectFrom('sms_outbox')
        .select('state')
        .where('message_id', '=', ran[0]!.body.message_id)
        .executeTakeFirst();
      return row?.state === 'sent' ? row : undefined;
    });
    expect(sent.state).toBe('sent');
    expect(textsTo(phone)).toHaveLength(1);
    const { body: thread } = await acme.get(`${path}`);
    expect(thread.messages.filter((m: { direction: string }) => m.direction === 'outbound')).toHaveLength(1);
  });

  it('refuses the same key with another body (422), and a malformed key (400), running nothing', async () => {
    const phone = '+15125550402';
    const accountId = await newAccountWithLead(acmeKey, phone);
    const path = `/accounts/${accountId}/conversations/${encodeURIComponent(phone)}/messages`;
    const first = await send(acmeKey, 'POST', path, { body: 'First text' }, 'key-reused');
    expect(first.status).toBe(200);

    const other = await send(acmeKey, 'POST', path, { body: 'Second text' }, 'key-reused');
    expect(other.status).toBe(422);
    expect(other.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(other.body.code).toBe('idempotency_key_reused');
    const elsewhere = await send(
      acmeKey,
      'PATCH',
      `/accounts/${accountId}`,
      { name: 'Renamed' },
      'key-reused',
    );
    expect(elsewhere.status).toBe(422);

    for (const bad of ['x'.repeat(256), 'naïve-key', '']) {
      const refused = await send(acmeKey, 'POST', path, { body: 'Third text' }, bad);
      expect(refused.status, bad).toBe(400);
      expect(refused.body.code).toBe('invalid_idempotency_key');
    }
    const ok = await send(acmeKey, 'POST', path, { body: 'Fourth text' }, 'x'.repeat(255));
    expect(ok.status).toBe(200);

    const { body: thread } = await acme.get(path);
    expect(thread.messages.map((m: { body: string }) => m.body).sort()).toEqual([
      'First text',
      'Fourth text',
    ]);
    expect((await acme.get(`/accounts/${accountId}`)).body.name).toBe('Sunrise Mortgage');
  });

  it('replays a created resource with its status, and stores refusals too', async () => {
    const created = await send(acmeKey, 'POST', '/accounts', { name: 'Keyed Lending' }, 'create-keyed');
    expect(created.status).toBe(201);
    const again = await send(acmeKey, 'POST', '/accounts', { name: 'Keyed Lending' }, 'create-keyed');
    expect(again.status).toBe(201);
    expect(again.raw).toBe(created.raw);
    expect(again.headers['content-type']).toBe(created.headers['content-type']);
    const { body: list } = await acme.get('/accounts?limit=250');
    expect(list.accounts.filter((a: { name: string }) => a.name === 'Keyed Lending')).toHaveLength(1);

    // A 4xx the command answered is its answer too: the retry gets it, even once the cause is gone.
    const missingAccount = `/accounts/${randomUUID()}/leads`;
    const missing = await send(acmeKey, 'POST', missingAccount, { phone: '+15125550499' }, 'k-404');
    expect(missing.status).toBe(404);
    const retried = await send(acmeKey, 'POST', missingAccount, { phone: '+15125550499' }, 'k-404');
    expect(retried.status).toBe(404);
    expect(retried.raw).toBe(missing.raw);
  });

  it('scopes keys to the partner: another partner with the same key runs its own request', async () => {
    const mine = await send(acmeKey, 'POST', '/accounts', { name: 'Shared Key Homes' }, 'shared-key');
    const theirs = await send(otherKey, 'POST', '/accounts', { name: 'Shared Key Homes' }, 'shared-key');
    expect(mine.status).toBe(201);
    expect(theirs.status).toBe(201);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(theirs.body.id).not.toBe(mine.body.id);
    const { body: list } = await partnerClient(system.app, otherKey).get('/accounts');
    expect(list.accounts.map((a: { id: string }) => a.id)).toEqual([theirs.body.id]);
  });

  it('keeps an answer 24 hours, then frees the key and purges what expired', async () => {
    const first = await send(acmeKey, 'POST', '/accounts', { name: 'Day One Loans' }, 'daily-key');
    expect(first.status).toBe(201);
    await send(acmeKey, 'POST', '/accounts', { name: 'Forgotten Loans' }, 'forgotten-key');

    clock.advance(24 * 3600_000 - 1000);
    const late = await send(acmeKey, 'POST', '/accounts', { name: 'Day One Loans' }, 'daily-key');
    expect(late.raw).toBe(first.raw);

    // Purges run at most once a minute per instance: this request is past both.
    clock.advance(2 * 60_000);
    const reused = await send(acmeKey, 'POST', '/accounts', { name: 'Day Two Loans' }, 'daily-key');
    expect(reused.status).toBe(201);
    expect(reused.body.id).not.toBe(first.body.id);
    await eventually(async () => {
      const row = await system.services.db
        .selectFrom('idempotency_keys')
        .select('key')
        .where('key', '=', 'forgotten-key')
        .executeTakeFirst();
      return row === undefined ? true : undefined;
    });
  });

  it('lets a retry run when the request holding the key died with its process', async () => {
    const partnerId = (
      await system.services.db
        .selectFrom('partner_api_keys')
        .select('partner_id')
        .orderBy('created_at')
        .executeTakeFirstOrThrow()
    ).partner_id;
    const now = clock.now();
    await system.services.db
      .insertInto('idempotency_keys')
      .values({
        partner_id: partnerId,
        key: 'orphaned-key',
        request_hash: 'from a request that never answered',
        owner: 'a request of a dead instance',
        locked_until: new Date(now.getTime() - 1000),
        created_at: new Date(now.getTime() - 3 * 60_000),
        expires_at: new Date(now.getTime() + 3600_000),
      })
      .execute();
    const retried = await send(acmeKey, 'POST', '/accounts', { name: 'Orphan Lending' }, 'orphaned-key');
    expect(retried.status).toBe(201);
    const replay = await send(acmeKey, 'POST', '/accounts', { name: 'Orphan Lending' }, 'orphaned-key');
    expect(replay.raw).toBe(retried.raw);
  });
});
