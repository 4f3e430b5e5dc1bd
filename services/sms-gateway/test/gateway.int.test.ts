import { projections, startProjector, type RunningProjector } from '@leadline/projector';
import {
  connectCommandServices,
  createDb,
  newUuid,
  listParked,
  type CommandBus,
  skipParked,
  type CommandServices,
  type EventToAppend,
} from '@leadline/runtime';
import { createTwilioProvider, type SmsSender } from '@leadline/telephony';
import {
  accountEvents,
  createTestEnvironment,
  eventually,
  fakeClock,
  startFakeTwilio,
  type FakeTwilio,
  type TestEnvironment,
} from '@leadline/test-kit';
import { sql, type Kysely } from 'kysely';
import type { Database } from '@leadline/runtime';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSmsGateway, type GatewayDeps, type RunningGateway } from '../src/gateway';
import { claimPending } from '../src/outbox';

let env: TestEnvironment;
let services: CommandServices;
let projector: RunningProjector;
let projectorDb: Kysely<Database>;
let gatewayDb: Kysely<Database>;
let twilio: FakeTwilio;
let sender: SmsSender;
const clock = fakeClock();
const running: RunningGateway[] = [];

beforeAll(async () => {
  env = await createTestEnvironment();
  services = await connectCommandServices({ ...env.config, PROJECTION_WAIT_MS: 10_000 }, 'gateway-test', {
    clock,
  });
  projectorDb = createDb(env.config.DATABASE_URL, { maxConnections: 4 });
  projector = await startProjector({
    ...services,
    db: projectorDb,
    groupId: `${env.config.TOPIC_PREFIX}leadline.projector`,
    projections,
  });
  gatewayDb = createDb(env.config.DATABASE_URL, { maxConnections: 4 });
  twilio = await startFakeTwilio();
  sender = createTwilioProvider({
    accountSid: twilio.accountSid,
    authToken: twilio.authToken,
    apiBaseUrl: twilio.baseUrl,
    publicUrl: 'http://127.0.0.1:8080',
  });
});
// Each test runs its own gateways; none outlives it.
afterEach(async () => {
  for (const gateway of running.splice(0)) await gateway.stop();
});
afterAll(async () => {
  await projector?.stop();
  await projectorDb?.destroy();
  await gatewayDb?.destroy();
  await services?.close();
  await twilio?.close();
  await env?.dispose();
});

/** A gateway in its own consumer group (a fresh group reads the whole log from offset 0). */
async function gateway(overrides: Partial<GatewayDeps> = {}) {
  const started = await startSmsGateway({
    ...services,
    db: gatewayDb,
    sender,
    clock,
    groupId: `${env.config.TOPIC_PREFIX}gateway-${newUuid()}`,
    pollIntervalMs: 60_000,
    onError: () => undefined,
    ...overrides,
  });
  running.push(started);
  return started;
}

const context = {
  partnerId: 'partner-1',
  actor: { kind: 'system' as const, service: 'test' },
  correlationId: 'c',
};
const append = (accountId: string, events: EventToAppend[]) =>
  services.commands.append({ stream: { topic: 'account', accountId }, context, events });

async function account(accountId: string, phoneNumber: string) {
  await append(accountId, [
    {
      type: 'account.created',
      data: {
        name: 'Gateway Co',
        company_name: 'Gateway Co',
        slug: accountId,
        phone_number: phoneNumber,
        phone_number_provisioned: true,
        forwarding_number: null,
        branding: { logo_url: null, accent_color: null },
        metadata: {},
      },
    },
  ]);
}

const request = (
  phone: string,
  body: string,
  source: 'manual' | 'system' = 'manual',
  messageId = newUuid(),
) =>
  ({
    type: 'message.outbound_requested',
    data: { message_id: messageId, phone, body, source, sender_name: null },
  }) as const;

const outboxState = (messageId: string) =>
  gatewayDb.selectFrom('sms_outbox').select('state').where('message_id', '=', messageId).executeTakeFirst();
const settled = (messageId: string) =>
  eventually(async () => {
    const row = await outboxState(messageId);
    return row?.state === 'sent' || row?.state === 'failed' ? row.state : undefined;
  });
const messageRow = (messageId: string) =>
  services.db.selectFrom('messages').selectAll().where('id', '=', messageId).executeTakeFirstOrThrow();
/** The message as the API shows it, once the gateway's report of it has been projected. */
const recorded = (messageId: string) =>
  eventually(async () => {
    const row = await messageRow(messageId);
    return row.sent || row.status === 'failed' ? row : undefined;
  });
const sentTo = (phone: string) => twilio.messages.filter((message) => message.to === phone);

describe('the SMS gateway', () => {
  it('sends a request redelivered on the log once, and a gateway restarted from offset 0 sends nothing again', async () => {
    await account('acc-redeliver', '+15125551001');
    await gateway();
    const twice = request('+15125552001', 'Only once');
    await append('acc-redeliver', [twice]);
    await append('acc-redeliver', [twice]);
    expect(await settled(twice.data.message_id)).toBe('sent');
    expect(await recorded(twice.data.message_id)).toMatchObject({ status: 'queued', sent: true });

    const replay = await gateway();
    await eventually(async () =>
      (await gatewayDb.selectFrom('sms_outbox').select('message_id').execute()).length > 0 ? true : undefined,
    );
    await replay.dispatch();
    expect(sentTo('+15125552001')).toHaveLength(1);
    expect(sentTo('+15125552001')[0]).toMatchObject({ from: '+15125551001', body: 'Only once' });
    const usage = await services.db
      .selectFrom('usage_counters')
      .select('messages_sent')
      .where('account_id', '=', 'acc-redeliver')
      .executeTakeFirstOrThrow();
    expect(usage.messages_sent).toBe(1);
  });

  it('refuses an opted-out number, except the compliance reply, and a deactivated account', async () => {
    await account('acc-refuse', '+15125551002');
    await gateway();
    await append('acc-refuse', [
      {
        type: 'lead.opted_out',
        data: { phone: '+15125552002', lead_id: null, lead_name: null, keyword: 'STOP', message_id: 'm0' },
      },
    ]);
    const manual = request('+15125552002', 'Are you there?');
    const confirmation = request('+15125552002', 'Gateway Co: You are unsubscribed.', 'system');
    await append('acc-refuse', [manual, confirmation]);
    expect(await settled(manual.data.message_id)).toBe('failed');
    expect(await settled(confirmation.data.message_id)).toBe('sent');
    expect(sentTo('+15125552002').map((message) => message.body)).toEqual([
      'Gateway Co: You are unsubscribed.',
    ]);
    expect(await recorded(manual.data.message_id)).toMatchObject({
      status: 'failed',
      error_code: 'lead_opted_out',
    });

    await append('acc-refuse', [{ type: 'account.deactivated', data: {} }]);
    const late = request('+15125552003', 'After deactivation');
    await append('acc-refuse', [late]);
    expect(await settled(late.data.message_id)).toBe('failed');
    expect(sentTo('+15125552003')).toHaveLength(0);
  });

  it('records a message Twilio refuses as failed, with its error code', async () => {
    await account('acc-invalid', '+15125551003');
    await gateway();
    twilio.invalidRecipients.add('+15125552004');
    const refused = request('+15125552004', 'Hello');
    await append('acc-invalid', [refused]);
    expect(await settled(refused.data.message_id)).toBe('failed');
    expect(await recorded(refused.data.message_id)).toMatchObject({
      status: 'failed',
      error_code: 'twilio_21211',
    });
  });

  it('never resends after a crash between Twilio accepting and the send being recorded; the status callback settles it', async () => {
    await account('acc-crash', '+15125551004');
    // Twilio accepts the message, then the gateway "dies" before it can record that.
    const crashing: SmsSender = {
      async send(message) {
        await sender.send(message);
        throw new Error('gateway killed mid-send');
      },
    };
    const first = await gateway({ sender: crashing });
    const unlucky = request('+15125552005', 'Sent exactly once');
    await append('acc-crash', [unlucky]);
    await eventually(async () =>
      (await outboxState(unlucky.data.message_id))?.state === 'sending' ? true : undefined,
    );
    await first.stop();
    running.splice(running.indexOf(first), 1);

    // A new gateway instance reads the request again and finds the row in flight: it never resends it.
    const second = await gateway();
    await second.dispatch();
    clock.advance(2 * 60_000);
    expect(await second.reconcile()).toBe(0);
    expect(sentTo('+15125552005')).toHaveLength(1);

    // Twilio's status callback (its URL names our message id) is projected: the send is recorded.
    const accepted = sentTo('+15125552005')[0]!;
    expect(accepted.statusCallback).toBe(
      `http://127.0.0.1:8080/twilio/status?message_id=${unlucky.data.message_id}&account_id=acc-crash#ct=3000&rt=5000&tt=15000&rc=3&rp=ct,rt,5xx`,
    );
    await append('acc-crash', [
      {
        type: 'message.status_updated',
        data: {
          message_id: unlucky.data.message_id,
          phone: '+15125552005',
          provider_message_id: accepted.sid,
          status: 'delivered',
          provider_status: 'delivered',
          error_code: null,
        },
      },
    ]);
    expect(await second.reconcile()).toBe(1);
    expect(await outboxState(unlucky.data.message_id)).toEqual({ state: 'sent' });
    expect(await messageRow(unlucky.data.message_id)).toMatchObject({
      status: 'delivered',
      sent: true,
      provider_message_id: accepted.sid,
    });
    expect(sentTo('+15125552005')).toHaveLength(1);
  });

  it('records an interrupted send that Twilio never confirms as failed after the timeout, without resending', async () => {
    await account('acc-lost', '+15125551005');
    const lost: SmsSender = {
      async send() {
        throw new Error('connection reset');
      },
    };
    const instance = await gateway({ sender: lost, sendingTimeoutMs: 10 * 60_000 });
    const unknown = request('+15125552006', 'Fate unknown');
    await append('acc-lost', [unknown]);
    await eventually(async () =>
      (await outboxState(unknown.data.message_id))?.state === 'sending' ? true : undefined,
    );
    clock.advance(11 * 60_000);
    expect(await instance.reconcile()).toBe(1);
    expect(await outboxState(unknown.data.message_id)).toEqual({ state: 'failed' });
    expect(await messageRow(unknown.data.message_id)).toMatchObject({
      status: 'failed',
      error_code: 'send_unconfirmed',
    });
  });

  it("parks a request it cannot read, holds that account's later requests behind it and sends every other account's", async () => {
    await account('acc-poisoned', '+15125551006');
    await account('acc-healthy', '+15125551007');
    // A record no codec can read, claiming to be a request (a broken producer, a corrupted copy).
    const producer = services.kafka.producer();
    await producer.connect();
    await producer.send({
      topic: services.topics.account,
      messages: [
        {
          key: 'acc-poisoned',
          value: Buffer.from('not an event'),
          headers: { 'event-type': 'message.outbound_requested' },
        },
      ],
    });
    await producer.disconnect();
    const waiting = request('+15125552007', 'Behind the bad one');
    const healthy = request('+15125552008', 'Goes out');
    await append('acc-poisoned', [waiting]);
    await append('acc-healthy', [healthy]);

    const instance = await gateway({ parkedPollMs: 100, onParked: () => undefined });
    await instance.dispatch();
    expect(await settled(healthy.data.message_id)).toBe('sent');
    const parkedRows = () =>
      gatewayDb
        .selectFrom('parked_records')
        .select(['topic', 'partition', 'offset', 'status', 'consumer'])
        .where('consumer', '=', 'sms_gateway')
        .where('stream_key', '=', 'acc-poisoned')
        .orderBy('offset')
        .execute();
    const rows = await eventually(async () => ((await parkedRows()).length === 2 ? parkedRows() : undefined));
    expect(rows.map((row) => row.status)).toEqual(['parked', 'held']);
    expect(await outboxState(waiting.data.message_id)).toBeUndefined();

    // The operator skips the bad record, for the gateway and for the read models: the held request goes out.
    for (const consumer of ['sms_gateway', 'projector'])
      expect(await skipParked(gatewayDb, { ...rows[0]!, consumer }, 'unreadable record', clock.now())).toBe(
        true,
      );
    await eventually(async () => ((await outboxState(waiting.data.message_id)) ? true : undefined));
    // The account's decisions wait until the read models applied what was held too.
    await eventually(async () => ((await listParked(gatewayDb)).length === 0 ? true : undefined));
    await instance.dispatch();
    // The first passes after the release may be refused (the read models still applying what was
    // held, the event log's time bound on a busy host) and are retried with backoff from 1 s, doubling:
    // give the send the time four retries take, not only one.
    const sent = await eventually(
      async () => {
        const row = await outboxState(waiting.data.message_id);
        return row?.state === 'sent' || row?.state === 'failed' ? row.state : undefined;
      },
      { timeoutMs: 60_000 },
    );
    expect(sent).toBe('sent');
  });

  it('fails a manual message that waited longer than the queue allows as expired, never sending it; a sequence step still goes out', async () => {
    await account('acc-expired', '+15125551008');
    const stale = request('+15125552009', 'Sent hours late');
    const step = {
      type: 'message.outbound_requested',
      data: {
        message_id: newUuid(),
        phone: '+15125552010',
        body: 'Step 1',
        source: 'sequence',
        sender_name: null,
      },
    } as const;
    await append('acc-expired', [stale, step]);
    // The gateway was down for an hour and a bit; it comes back to a backlog.
    clock.advance(61 * 60_000);
    await gateway({ maxQueueAgeMs: 60 * 60_000 });
    expect(await settled(stale.data.message_id)).toBe('failed');
    expect(await settled(step.data.message_id)).toBe('sent');
    expect(sentTo('+15125552009')).toHaveLength(0);
    expect(sentTo('+15125552010')).toHaveLength(1);
    expect(await recorded(stale.data.message_id)).toMatchObject({ status: 'failed', error_code: 'expired' });
  });

  it("lets the account's other writers decide while a send waits on Twilio", async () => {
    await account('acc-busy', '+15125551009');
    await gateway();
    const release = twilio.holdAnswers();
    try {
      const slow = request('+15125552011', 'Twilio is slow today');
      await append('acc-busy', [slow]);
      await eventually(async () => (sentTo('+15125552011').length === 1 ? true : undefined));
      // A writer of the same account (an import, a manual message) takes the account's lock and decides.
      const { events } = await services.commands.execute({
        stream: { topic: 'account', accountId: 'acc-busy' },
        context,
        lockKeys: ['account:acc-busy'],
        consistency: 'partition',
        decide: async () => ({
          events: [
            {
              type: 'lead.opted_out',
              data: {
                phone: '+15125552099',
                lead_id: null,
                lead_name: null,
                keyword: 'STOP',
                message_id: 'm1',
              },
            },
          ],
          result: undefined,
        }),
      });
      expect(events).toHaveLength(1);
      // It answered while Twilio still held the send.
      expect(await outboxState(slow.data.message_id)).toEqual({ state: 'sending' });
    } finally {
      release();
    }
  });

  it('settles an interrupted send once when two gateways reconcile it at the same time', async () => {
    await account('acc-twice', '+15125551010');
    const appended: string[] = [];
    const counting: CommandBus = {
      execute: (command) => services.commands.execute(command),
      append: async (facts) => {
        appended.push(
          ...facts.events.map(
            (event) => `${event.type}:${(event.data as { message_id?: string }).message_id}`,
          ),
        );
        return services.commands.append(facts);
      },
      close: async () => undefined,
    };
    const lost: SmsSender = {
      async send() {
        throw new Error('connection reset');
      },
    };
    const one = await gateway({ sender: lost, commands: counting });
    const interrupted = request('+15125552012', 'Fate unknown');
    await append('acc-twice', [interrupted]);
    await eventually(async () =>
      (await outboxState(interrupted.data.message_id))?.state === 'sending' ? true : undefined,
    );
    const other = await gateway({ commands: counting });
    clock.advance(11 * 60_000);
    const counts = await Promise.all([
      one.reconcile(),
      other.reconcile(),
      one.reconcile(),
      other.reconcile(),
    ]);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(1);
    expect(appended.filter((entry) => entry.endsWith(interrupted.data.message_id))).toEqual([
      `message.failed:${interrupted.data.message_id}`,
    ]);
    expect(await outboxState(interrupted.data.message_id)).toEqual({ state: 'failed' });
  });

  it('sends nothing more to a number that opts out while its earlier message waits on Twilio', async () => {
    await account('acc-optout-late', '+15125551011');
    await gateway();
    const release = twilio.holdAnswers();
    const first = request('+15125552013', 'First');
    const second = request('+15125552013', 'Second');
    try {
      // Both are decided together; the opt-out lands while the first is on the wire.
      await append('acc-optout-late', [first, second]);
      await eventually(async () => (sentTo('+15125552013').length === 1 ? true : undefined));
      await append('acc-optout-late', [
        {
          type: 'lead.opted_out',
          data: { phone: '+15125552013', lead_id: null, lead_name: null, keyword: 'STOP', message_id: 'm2' },
        },
      ]);
      // The opt-out is in the read models before the first send returns (the append's own wait for the
      // projector is bounded; on a loaded machine it may answer first).
      await eventually(async () => {
        const conversation = await services.db
          .selectFrom('conversations')
          .select('opted_out')
          .where('account_id', '=', 'acc-optout-late')
          .where('phone', '=', '+15125552013')
          .executeTakeFirst();
        return conversation?.opted_out ? true : undefined;
      });
    } finally {
      release();
    }
    expect(await settled(first.data.message_id)).toBe('sent');
    expect(await settled(second.data.message_id)).toBe('failed');
    expect(sentTo('+15125552013').map((message) => message.body)).toEqual(['First']);
    expect(await recorded(second.data.message_id)).toMatchObject({
      status: 'failed',
      error_code: 'lead_opted_out',
    });
  });
  it("records each pass's outcomes (refused, sent, refused by Twilio) once each, in the order the messages were requested, for every account", async () => {
    await account('acc-pass-a', '+15125551021');
    await account('acc-pass-b', '+15125551022');
    await append('acc-pass-a', [
      {
        type: 'lead.opted_out',
        data: { phone: '+15125552021', lead_id: null, lead_name: null, keyword: 'STOP', message_id: 'm21' },
      },
    ]);
    twilio.invalidRecipients.add('+15125552022');
    const a = [
      request('+15125552023', 'A first'),
      request('+15125552021', 'A to the opted-out number'),
      request('+15125552024', 'A second'),
      request('+15125552022', 'A to an invalid number'),
      request('+15125552025', 'A third'),
    ];
    const b = [
      request('+15125552026', 'B first'),
      request('+15125552022', 'B to an invalid number'),
      request('+15125552027', 'B second'),
    ];
    // Queued before the gateway starts, so each account's messages are claimed and decided together;
    // each request its own, as if each came from its own API call.
    const traced = (messages: typeof a) =>
      messages.map((message) => ({ ...message, correlationId: `req-${message.data.message_id}` }));
    await append('acc-pass-a', traced(a));
    await append('acc-pass-b', traced(b));
    await gateway();
    for (const message of [...a, ...b]) await recorded(message.data.message_id);

    const outcomes = (await accountEvents(services)).flatMap((event) =>
      (event.type === 'message.sent' || event.type === 'message.failed') &&
      [...a, ...b].some((message) => message.data.message_id === event.data.message_id)
        ? [
            {
              account: event.account_id,
              id: event.data.message_id,
              outcome: event.type === 'message.sent' ? 'sent' : event.data.reason,
              traced: event.correlation_id === `req-${event.data.message_id}`,
            },
          ]
        : [],
    );
    const of = (accountId: string) => outcomes.filter((outcome) => outcome.account === accountId);
    expect(of('acc-pass-a')).toEqual([
      { account: 'acc-pass-a', id: a[0]!.data.message_id, outcome: 'sent', traced: true },
      { account: 'acc-pass-a', id: a[1]!.data.message_id, outcome: 'lead_opted_out', traced: true },
      { account: 'acc-pass-a', id: a[2]!.data.message_id, outcome: 'sent', traced: true },
      { account: 'acc-pass-a', id: a[3]!.data.message_id, outcome: 'provider_rejected', traced: true },
      { account: 'acc-pass-a', id: a[4]!.data.message_id, outcome: 'sent', traced: true },
    ]);
    expect(of('acc-pass-b')).toEqual([
      { account: 'acc-pass-b', id: b[0]!.data.message_id, outcome: 'sent', traced: true },
      { account: 'acc-pass-b', id: b[1]!.data.message_id, outcome: 'provider_rejected', traced: true },
      { account: 'acc-pass-b', id: b[2]!.data.message_id, outcome: 'sent', traced: true },
    ]);
    // Twilio got every allowed message once, in order, and nothing for the opted-out number.
    expect(sentTo('+15125552021')).toHaveLength(0);
    const bodiesFrom = (from: string) =>
      twilio.messages.filter((message) => message.from === from).map((message) => message.body);
    expect(bodiesFrom('+15125551021')).toEqual(['A first', 'A second', 'A third']);
    expect(bodiesFrom('+15125551022')).toEqual(['B first', 'B second']);
  });

  it("gives up on an account's pass past its time budget, so another account's message goes out meanwhile, in order for both", async () => {
    await account('acc-stuck', '+15125551031');
    await account('acc-next', '+15125551032');
    // The provider never answers for one number (a request Twilio holds open): its send waits on it.
    const stuckPhone = '+15125552031';
    const hanging: SmsSender = {
      send: (message) => (message.to === stuckPhone ? new Promise(() => undefined) : sender.send(message)),
    };
    // One worker, whose passes may last a second (half the lease); the provider call itself may take ten minutes.
    await gateway({ sender: hanging, concurrency: 1, leaseMs: 2000, sendTimeoutMs: 600_000 });
    const first = request(stuckPhone, 'Never answered');
    const behind = request('+15125552032', 'Waits behind it');
    await append('acc-stuck', [first, behind]);
    await eventually(async () =>
      (await outboxState(first.data.message_id))?.state === 'sending' ? true : undefined,
    );
    const other = request('+15125552033', 'Another account');
    await append('acc-next', [other]);
    expect(await settled(other.data.message_id)).toBe('sent');
    // The stuck pass sent nothing more: the message behind the unanswered one is still waiting, in order.
    expect(await outboxState(first.data.message_id)).toEqual({ state: 'sending' });
    expect(await outboxState(behind.data.message_id)).toEqual({ state: 'pending' });
    expect(sentTo('+15125552032')).toHaveLength(0);
  });

  it('stops without waiting for a send the provider never answers, handing the rest of its pass back at once', async () => {
    await account('acc-stopping', '+15125551041');
    const stuckPhone = '+15125552041';
    const hanging: SmsSender = {
      send: (message) => (message.to === stuckPhone ? new Promise(() => undefined) : sender.send(message)),
    };
    const instance = await gateway({ sender: hanging, sendTimeoutMs: 600_000, drainMs: 100 });
    const first = request(stuckPhone, 'Never answered');
    const behind = request('+15125552042', 'Next in line');
    await append('acc-stopping', [first, behind]);
    await eventually(async () =>
      (await outboxState(first.data.message_id))?.state === 'sending' ? true : undefined,
    );
    await instance.stop();
    running.splice(running.indexOf(instance), 1);
    const rows = await gatewayDb
      .selectFrom('sms_outbox')
      .select(['message_id', 'state', 'lease_until', 'claim_token'])
      .where('account_id', '=', 'acc-stopping')
      .orderBy('created_at')
      .orderBy('message_id')
      .execute();
    const byId = new Map(rows.map((row) => [row.message_id, row]));
    // The unanswered send is never sent again (reconciliation settles it); the message behind it is free
    // for the next gateway now, not when the lease would have run out.
    expect(byId.get(first.data.message_id)).toMatchObject({ state: 'sending' });
    expect(byId.get(behind.data.message_id)).toEqual({
      message_id: behind.data.message_id,
      state: 'pending',
      lease_until: null,
      claim_token: null,
    });
  });

  it("never splits an account's rows between two claims made at once", async () => {
    // Older than any other test's messages: claims take the oldest accounts first.
    await sql`
      insert into sms_outbox (message_id, account_id, partner_id, phone, body, source, correlation_id,
        causation_id, created_at)
      select 'split-' || g, 'acc-split', 'partner', '+15125550001', 'Message ' || g, 'manual', 'c', 'c',
        timestamptz '2000-01-01' + g * interval '1 millisecond'
      from generate_series(1, 2) g`.execute(gatewayDb);
    const ofAccount = (rows: { account_id: string; message_id: string }[]) =>
      rows.filter((row) => row.account_id === 'acc-split').map((row) => row.message_id);
    try {
      await gatewayDb.transaction().execute(async (trx) => {
        // A claim of one row, not yet committed: the account's first message is leased, its second is not.
        expect(ofAccount(await claimPending(trx, clock.now(), 60_000, 1, 5))).toEqual(['split-1']);
        // Another claim at that moment sees no lease yet; it must still leave the account alone, or
        // the second message would go out beside the first.
        expect(ofAccount(await claimPending(gatewayDb, clock.now(), 60_000, 50, 5))).toEqual([]);
      });
      // Committed, the lease keeps the account with the first claim.
      expect(ofAccount(await claimPending(gatewayDb, clock.now(), 60_000, 50, 5))).toEqual([]);
    } finally {
      await gatewayDb.deleteFrom('sms_outbox').where('account_id', '=', 'acc-split').execute();
    }
  });

  it('lets a claim made at the same instant take the accounts the first claim does not need', async () => {
    // Account A's three messages are older than account B's two, and both older than any other test's
    // (claims take the oldest accounts first).
    await sql`
      insert into sms_outbox (message_id, account_id, partner_id, phone, body, source, correlation_id,
        causation_id, created_at)
      select 'share-' || account || '-' || g, 'acc-share-' || account, 'partner', '+15125550002', 'Hello',
        'manual', 'c', 'c',
        timestamptz '2000-01-01' + (case account when 'a' then 0 else 10 end + g) * interval '1 millisecond'
      from generate_series(1, 3) g, unnest(array['a', 'b']) account
      where account = 'a' or g <= 2`.execute(gatewayDb);
    const ofAccounts = (rows: { account_id: string; message_id: string }[]) =>
      rows.filter((row) => row.account_id.startsWith('acc-share-')).map((row) => row.message_id);
    try {
      await gatewayDb.transaction().execute(async (trx) => {
        // A claim of three rows: account A fills it, so it holds A only.
        expect(ofAccounts(await claimPending(trx, clock.now(), 60_000, 3, 3))).toEqual([
          'share-a-1',
          'share-a-2',
          'share-a-3',
        ]);
        // A second claim meanwhile passes over A and takes B.
        expect(ofAccounts(await claimPending(gatewayDb, clock.now(), 60_000, 3, 3))).toEqual([
          'share-b-1',
          'share-b-2',
        ]);
      });
    } finally {
      await gatewayDb.deleteFrom('sms_outbox').where('account_id', 'like', 'acc-share-%').execute();
    }
  });

  it('claims through the outbox indexes, never reading every message it ever sent', async () => {
    // The outbox keeps every row it sent: a history far larger than what is in play.
    await sql`
      insert into sms_outbox (message_id, account_id, partner_id, phone, body, source, correlation_id,
        causation_id, state, report, reported_at)
      select 'history-' || g, 'acc-history', 'partner', '+15125550000', 'Sent long ago', 'manual', 'c', 'c',
        'sent', '{}'::jsonb, now()
      from generate_series(1, 20000) g`.execute(gatewayDb);
    // And a few waiting to go out.
    await sql`
      insert into sms_outbox (message_id, account_id, partner_id, phone, body, source, correlation_id,
        causation_id)
      select 'waiting-' || g, 'acc-history', 'partner', '+15125550000', 'Due now', 'manual', 'c', 'c'
      from generate_series(1, 3) g`.execute(gatewayDb);
    await sql`analyze sms_outbox`.execute(gatewayDb);
    try {
      const read = await gatewayDb.transaction().execute(async (trx) => {
        expect(await claimPending(trx, clock.now(), 60_000, 50, 50)).toHaveLength(3);
        // The rows this transaction read from the table, by scan or through an index.
        const { rows } = await sql<{ read: string }>`
          select seq_tup_read + coalesce(idx_tup_fetch, 0) as read
          from pg_stat_xact_user_tables where relname = 'sms_outbox'`.execute(trx);
        return Number(rows[0]!.read);
      });
      expect(read).toBeLessThan(1_000);
    } finally {
      await gatewayDb.deleteFrom('sms_outbox').where('account_id', '=', 'acc-history').execute();
    }
  });
});
