import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newUuid } from '@leadline/runtime';
import {
  createTestEnvironment,
  eventually,
  startFakeTwilio,
  type FakeTwilio,
  type TestEnvironment,
} from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver } from '@leadline/test-kit';
import { generateApiKey } from '../src/partners/api-keys';
import { createPartner } from '../src/partners/partners';
import { startCluster, type Cluster } from '../../../system-test/cluster';

/**
 * Two processes of every service at once, each from its main module (two command APIs behind one
 * public URL, two of each consumer sharing its group), on the real Kafka, registry and PostgreSQL with
 * Twilio faked: every guarantee must hold whichever instance takes a request or a record.
 */
let env: TestEnvironment;
let twilio: FakeTwilio;
let receiver: Receiver;
let caDir: string;
let cluster: Cluster;

beforeAll(async () => {
  env = await createTestEnvironment();
  twilio = await startFakeTwilio();
  receiver = await startReceiver();
  caDir = mkdtempSync(join(tmpdir(), 'leadline-ca-'));
  writeFileSync(join(caDir, 'receiver.pem'), receiver.ca);
  cluster = await startCluster({
    config: env.config,
    twilio,
    env: {
      // The relays trust the receiver's self-signed certificate, as a partner's would be trusted.
      NODE_EXTRA_CA_CERTS: join(caDir, 'receiver.pem'),
      // One sequence `delay_hours` unit is a second; steps are looked for often.
      SEQUENCE_HOUR_SECONDS: '1',
      SEQUENCER_POLL_MS: '200',
    },
  });
}, 240_000);
afterAll(async () => {
  await cluster?.close();
  await receiver?.close();
  await twilio?.close();
  if (caDir) rmSync(caDir, { recursive: true, force: true });
  await env?.dispose();
}, 60_000);

type Answer = { status: number; body: any }; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The partner API of the `instance`-th command API process, over real HTTP. */
function api(instance: number, key = cluster.partnerKey) {
  const call = async (method: string, path: string, body?: unknown): Promise<Answer> => {
    const response = await fetch(`${cluster.apiUrls[instance % cluster.apiUrls.length]}/v1${path}`, {
      method,
      headers: { 'x-partner-key': key, ...(body !== undefined && { 'content-type': 'application/json' }) },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };
  return {
    get: (path: string) => call('GET', path),
    post: (path: string, body: unknown = {}) => call('POST', path, body),
    patch: (path: string, body: unknown) => call('PATCH', path, body),
  };
}

async function newAccount(fields: Record<string, unknown> = {}, key?: string) {
  // Sequence steps go out without recorded consent here: the consent rule has its own tests.
  const created = await api(0, key).post('/accounts', {
    name: 'Sunrise Mortgage',
    consent_required: false,
    ...fields,
  });
  expect(created.status).toBe(201);
  return { id: created.body.id as string, number: created.body.phone_number as string };
}

/** An inbound SMS posted to the `instance`-th API, signed by Twilio for the public URL. */
async function inboundSms(instance: number, to: string, from: string, body: string) {
  const { status, sid } = await cluster.inboundSms(instance, { to, from, body });
  return { status, sid };
}

const atTwilio = (predicate: (message: FakeTwilio['messages'][number]) => boolean) =>
  twilio.messages.filter(predicate);

const sentTo = (phone: string, body: string) => atTwilio((m) => m.to === phone && m.body === body).length;

/**
 * Returns once a manual message posted through each command API after everything before it has
 * reached Twilio: a gateway sends an account's messages in order, so a second send of anything
 * earlier would have come before these.
 */
async function afterEverySend(accountId: string, phone: string) {
  const marks = cluster.apiUrls.map((_, i) => `Barrier ${newUuid()} through API ${i}`);
  for (const [i, body] of marks.entries()) {
    const sent = await api(i).post(
      `/accounts/${accountId}/conversations/${encodeURIComponent(phone)}/messages`,
      { body },
    );
    expect(sent.status).toBe(200);
  }
  await eventually(async () => (marks.every((body) => sentTo(phone, body) === 1) ? true : undefined), {
    timeoutMs: 60_000,
    message: 'the barrier messages never reached Twilio',
  });
}

const messagesOf = async (instance: number, accountId: string, phone: string) => {
  const answer = await api(instance).get(
    `/accounts/${accountId}/conversations/${encodeURIComponent(phone)}/messages?limit=100`,
  );
  expect(answer.status).toBe(200);
  return answer.body.messages as { id: string; direction: string; body: string; status: string }[];
};

const phoneOf = (n: number) => `+1512556${String(n).padStart(4, '0')}`;

describe('two instances of every service', () => {
  it('sends each manual message posted concurrently through both command APIs exactly once', async () => {
    const account = await newAccount();
    const phones = Array.from({ length: 10 }, (_, i) => phoneOf(1000 + i));
    const imported = await api(1).post(`/accounts/${account.id}/leads/bulk`, {
      leads: phones.map((phone) => ({ phone })),
    });
    expect(imported.status).toBe(200);

    const sends = phones.flatMap((phone, i) =>
      [0, 1].map((round) => ({ phone, body: `Manual ${i}.${round}` })),
    );
    const answers = await Promise.all(
      sends.map(({ phone, body }, i) =>
        api(i).post(`/accounts/${account.id}/conversations/${encodeURIComponent(phone)}/messages`, { body }),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(sends.map(() => 200));

    await eventually(
      async () => (sends.every(({ phone, body }) => sentTo(phone, body) > 0) ? true : undefined),
      { timeoutMs: 60_000, message: 'the manual messages never all reached Twilio' },
    );
    await afterEverySend(account.id, phones[0]!);
    for (const { phone, body } of sends) {
      expect({ body, sent: sentTo(phone, body) }).toEqual({ body, sent: 1 });
    }
  });

  it('delivers each webhook event exactly once with two relays', async () => {
    // A partner of its own, so the webhook sees only this test's events.
    const key = generateApiKey();
    await createPartner({ ...cluster.services, newId: newUuid }, 'Webhook partner', key);
    const hook = await api(0, key).post('/webhooks', {
      url: receiver.url('/leads'),
      events: ['lead.created'],
      secret: 'whsec_multi_instance_0123456789',
    });
    expect(hook.status).toBe(201);
    const account = await newAccount({}, key);
    const phones = Array.from({ length: 20 }, (_, i) => phoneOf(2000 + i));
    const imports = await Promise.all(
      phones.map((phone, i) => api(i, key).post(`/accounts/${account.id}/leads`, { phone })),
    );
    expect(imports.map((answer) => answer.status)).toEqual(phones.map(() => 201));

    const succeeded = await eventually(
      async () => {
        const { body } = await api(1, key).get(`/webhooks/${hook.body.id}/deliveries?limit=100`);
        const deliveries = body.deliveries as { id: string; status: string }[];
        return deliveries.length === phones.length && deliveries.every((d) => d.status === 'succeeded')
          ? deliveries
          : undefined;
      },
      { timeoutMs: 60_000, message: 'the deliveries never all succeeded' },
    );
    const requests = receiver.requests('/leads');
    const delivered = requests.map((request) => JSON.parse(request.body.toString()).data.phone as string);
    expect(delivered.sort()).toEqual([...phones].sort());
    const deliveryIds = requests.map((request) => request.headers['x-service-delivery-id']);
    expect(new Set(deliveryIds).size).toBe(phones.length);
    expect(new Set(deliveryIds)).toEqual(new Set(succeeded.map((delivery) => delivery.id)));
  });

  it('sends each due sequence step exactly once with two sequencers and two gateways', async () => {
    // Quiet hours off: the steps fall due whatever the time of day the test runs.
    const account = await newAccount({ company_name: 'Sunrise', sending_window: { enabled: false } });
    const sequence = await api(1).post(`/accounts/${account.id}/sequences`, {
      name: 'Welcome',
      steps: [
        { type: 'fixed', message: 'Step one' },
        { type: 'fixed', message: 'Step two', delay_hours: 1 },
        { type: 'fixed', message: 'Step three', delay_hours: 1 },
      ],
    });
    expect(sequence.status).toBe(201);
    const phones = Array.from({ length: 10 }, (_, i) => phoneOf(3000 + i));
    const enrolled = await Promise.all(
      phones.map(async (phone, i) => {
        expect((await api(i).post(`/accounts/${account.id}/leads`, { phone })).status).toBe(201);
        return (
          await api(i + 1).post(`/accounts/${account.id}/sequences/${sequence.body.id}/enroll`, { phone })
        ).status;
      }),
    );
    expect(enrolled.every((status) => status === 200 || status === 201)).toBe(true);

    await eventually(
      async () => {
        const { body } = await api(0).get(`/accounts/${account.id}/sequences/${sequence.body.id}`);
        return body.completed_count === phones.length ? true : undefined;
      },
      { timeoutMs: 90_000, message: 'the enrollments never all completed' },
    );
    await eventually(
      async () => (phones.every((phone) => atTwilio((m) => m.to === phone).length >= 3) ? true : undefined),
      { timeoutMs: 60_000, message: 'the steps never all reached Twilio' },
    );
    await afterEverySend(account.id, phones[0]!);
    for (const phone of phones) {
      const sent = atTwilio((m) => m.to === phone && m.body.startsWith('Step')).map((m) => m.body);
      expect({ phone, sent }).toEqual({ phone, sent: ['Step one', 'Step two', 'Step three'] });
    }
  });

  it("sends one number's messages in the order they were posted, whichever API took them, with two gateways", async () => {
    const account = await newAccount();
    const phone = phoneOf(7000);
    expect((await api(0).post(`/accounts/${account.id}/leads`, { phone })).status).toBe(201);
    const bodies = Array.from({ length: 12 }, (_, i) => `In order ${i}`);
    // Twilio holds its answers: the first message waits on the wire while the rest queue behind it, and
    // the workers of both gateways claim the backlog at once when it is released.
    const release = twilio.holdAnswers();
    try {
      for (const [i, body] of bodies.entries()) {
        const sent = await api(i).post(
          `/accounts/${account.id}/conversations/${encodeURIComponent(phone)}/messages`,
          { body },
        );
        expect(sent.status).toBe(200);
      }
      await eventually(async () => (sentTo(phone, bodies[0]!) === 1 ? true : undefined), {
        timeoutMs: 30_000,
        message: 'the first message never reached Twilio',
      });
    } finally {
      release();
    }
    await eventually(async () => (bodies.every((body) => sentTo(phone, body) === 1) ? true : undefined), {
      timeoutMs: 60_000,
      message: 'the messages never all reached Twilio',
    });
    expect(atTwilio((m) => m.to === phone).map((m) => m.body)).toEqual(bodies);
  });

  it('reads its own writes whichever command API answers the next request', async () => {
    const account = await newAccount();
    for (let i = 0; i < 10; i++) {
      const phone = phoneOf(4000 + i);
      const created = await api(i).post(`/accounts/${account.id}/leads`, { phone, name: `Lead ${i}` });
      expect(created.status).toBe(201);
      const read = await api(i + 1).get(`/accounts/${account.id}/leads/${encodeURIComponent(phone)}`);
      expect({ status: read.status, name: read.body.name }).toEqual({ status: 200, name: `Lead ${i}` });

      const sent = await api(i + 1).post(
        `/accounts/${account.id}/conversations/${encodeURIComponent(phone)}/messages`,
        {
          body: `Hello ${i}`,
        },
      );
      expect(sent.status).toBe(200);
      const messages = await messagesOf(i, account.id, phone);
      expect(messages.map((m) => m.id)).toContain(sent.body.message_id);

      const listed = await api(i).get(`/accounts/${account.id}/leads?limit=100`);
      expect(listed.body.total).toBe(i + 1);
    }
  });

  it('an inbound STOP through one command API blocks a manual send through the other', async () => {
    const account = await newAccount();
    const phone = phoneOf(5000);
    expect((await api(0).post(`/accounts/${account.id}/leads`, { phone })).status).toBe(201);
    expect((await inboundSms(0, account.number, phone, 'STOP')).status).toBe(200);

    // At once: refused, as opted out or while the STOP is still being decided; never sent.
    const right = await api(1).post(
      `/accounts/${account.id}/conversations/${encodeURIComponent(phone)}/messages`,
      {
        body: 'Right after the STOP',
      },
    );
    expect([409, 503]).toContain(right.status);
    expect(['lead_opted_out', 'projection_lagging']).toContain(right.body.code);
    const later = await eventually(
      async () => {
        const answer = await api(1).post(
          `/accounts/${account.id}/conversations/${encodeURIComponent(phone)}/messages`,
          { body: 'After the STOP' },
        );
        return answer.status === 503 ? undefined : answer;
      },
      { timeoutMs: 30_000 },
    );
    expect({ status: later.status, code: later.body.code }).toEqual({ status: 409, code: 'lead_opted_out' });
    // The lead shows the opt-out once the STOP is decided (sends are refused from its acknowledgement on).
    await eventually(
      async () => {
        const lead = await api(0).get(`/accounts/${account.id}/leads/${encodeURIComponent(phone)}`);
        return lead.body.opted_out === true ? true : undefined;
      },
      { timeoutMs: 30_000, message: 'the lead never showed the opt-out' },
    );
    // Twilio got the STOP's confirmation at most, never either manual message.
    expect(atTwilio((m) => m.to === phone && m.body.includes('the STOP'))).toEqual([]);
  });

  it('decides a burst of inbound SMS for one account once each, in order, with two deciders', async () => {
    const account = await newAccount();
    const phone = phoneOf(6000);
    const bodies = Array.from({ length: 30 }, (_, i) => `Burst ${i + 1}`);
    const sids: string[] = [];
    for (const [i, body] of bodies.entries()) {
      const answer = await inboundSms(i, account.number, phone, body);
      expect(answer.status).toBe(200);
      sids.push(answer.sid);
    }
    const inbound = await eventually(
      async () => {
        const received = (await messagesOf(1, account.id, phone)).filter((m) => m.direction === 'inbound');
        return received.length >= bodies.length ? received : undefined;
      },
      { timeoutMs: 60_000, message: 'the burst was never all decided' },
    );
    const listed = inbound.map((m) => m.body);
    // The conversation lists newest first or oldest first; either way, the burst's own order.
    expect(listed[0] === bodies[0] ? listed : [...listed].reverse()).toEqual(bodies);
    const stored = await cluster.services.db
      .selectFrom('messages')
      .select('provider_message_id')
      .where('provider_message_id', 'in', sids)
      .execute();
    expect(stored.length).toBe(bodies.length);
  });
});
