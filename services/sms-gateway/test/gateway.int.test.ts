import { newUuid, listParked, skipParked } from '@leadline/runtime';
import type { SmsSender } from '@leadline/telephony';
import { eventually } from '@leadline/test-kit';
import { describe, expect, it } from 'vitest';
import {
  services,
  gatewayDb,
  twilio,
  sender,
  clock,
  context,
  running,
  useGatewaySystem,
  gateway,
  append,
  account,
  request,
  outboxState,
  settled,
  messageRow,
  recorded,
  sentTo,
} from './gateway-system';

useGatewaySystem();

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
});
