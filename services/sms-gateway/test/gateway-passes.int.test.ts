import { type CommandBus } from '@leadline/runtime';
import type { SmsSender } from '@leadline/telephony';
import { accountEvents, eventually } from '@leadline/test-kit';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { claimPending } from '../src/outbox';
import {
  services,
  gatewayDb,
  twilio,
  sender,
  clock,
  running,
  useGatewaySystem,
  gateway,
  append,
  account,
  request,
  outboxState,
  settled,
  recorded,
  sentTo,
} from './gateway-system';

useGatewaySystem();

describe('the SMS gateway', () => {
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
