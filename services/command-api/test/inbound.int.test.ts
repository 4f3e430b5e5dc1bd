import { projections, startProjector, type RunningProjector } from '@leadline/projector';
import { createDb, newUuid, type Database } from '@leadline/runtime';
import {
  accountEvents,
  eventually,
  startFakeTwilio,
  twilioSignature,
  type FakeTwilio,
} from '@leadline/test-kit';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';
import { startTestInboundDecider } from '../../../system-test/workers';
import { postInboundSms } from '../../../system-test/inbound-sms';

let system: TestSystem;
let twilio: FakeTwilio;
let acme: PartnerClient;
let projectorDb: Kysely<Database>;
let projector: RunningProjector | undefined;
let deciderDb: Kysely<Database>;

const startOurProjector = async () => {
  projector = await startProjector({
    ...system.services,
    db: projectorDb,
    groupId: system.projectorGroupId,
    projections,
  });
};

beforeAll(async () => {
  twilio = await startFakeTwilio();
  // The projector is this file's to stop; inbound SMS are answered as Twilio sees it, undecided.
  system = await startSystem({
    twilio,
    gateway: true,
    projector: false,
    awaitInbound: false,
    projectionWaitMs: 2000,
  });
  projectorDb = createDb(system.env.config.DATABASE_URL, { maxConnections: 4 });
  deciderDb = createDb(system.env.config.DATABASE_URL, { maxConnections: 4 });
  await startOurProjector();
  acme = partnerClient(system.app, await system.createPartner('Acme CRM'));
}, 60_000);
afterAll(async () => {
  await projector?.stop();
  await system?.close();
  await projectorDb?.destroy();
  await deciderDb?.destroy();
  await twilio?.close();
});

let sids = 0;
const nextSid = () => `SM${String(++sids).padStart(8, '0')}${newUuid().replaceAll('-', '').slice(0, 24)}`;

/** Posts an inbound SMS signed exactly as Twilio signs it; returns the answer and how long it took. */
async function inboundSms(to: string, from: string, body: string, sid = nextSid()) {
  const started = performance.now();
  const response = await postInboundSms(system, { to, from, body, sid }, twilio);
  return { status: response.statusCode, ms: performance.now() - started, sid };
}

async function newAccount(name = 'Sunrise Mortgage') {
  const { status, body } = await acme.post('/accounts', { name });
  expect(status).toBe(201);
  return { id: body.id as string, number: body.phone_number as string };
}

const storedWithSid = async (sid: string) =>
  system.services.db
    .selectFrom('messages')
    .select(['account_id', 'phone'])
    .where('provider_message_id', '=', sid)
    .execute();

const optedOut = async (accountId: string, phone: string) =>
  (
    await system.services.db
      .selectFrom('conversations')
      .select('opted_out')
      .where('account_id', '=', accountId)
      .where('phone', '=', phone)
      .executeTakeFirst()
  )?.opted_out ?? false;

/** A message some other path decided before the STOP was known (a sequence step), queued for the gateway. */
async function queueSend(account: { id: string }, phone: string) {
  const messageId = newUuid();
  const partner = await system.services.db
    .selectFrom('accounts')
    .select('partner_id')
    .where('id', '=', account.id)
    .executeTakeFirstOrThrow();
  await system.services.commands.append({
    stream: { topic: 'account', accountId: account.id },
    context: {
      partnerId: partner.partner_id,
      actor: { kind: 'system', service: 'sequencer' },
      correlationId: messageId,
    },
    events: [
      {
        type: 'message.outbound_requested',
        data: {
          message_id: messageId,
          phone,
          body: 'Step 2: any questions?',
          source: 'sequence',
          sender_name: null,
        },
      },
    ],
    readYourWrites: false,
  });
  return messageId;
}

/** The gateway's verdict on a queued message, once it has one. */
const settledByGateway = (messageId: string) =>
  eventually(
    async () => {
      const row = await system.services.db
        .selectFrom('sms_outbox')
        .select('state')
        .where('message_id', '=', messageId)
        .executeTakeFirst();
      return row?.state === 'sent' || row?.state === 'failed' ? row.state : undefined;
    },
    { timeoutMs: 60_000 },
  );

const sentTo = (phone: string) => twilio.messages.filter((message) => message.to === phone);

let systemDeciderStopped = false;
/** Stops the system's own inbound decider (once): the test decides when deciding starts. */
async function stopSystemDecider() {
  if (systemDeciderStopped) return;
  systemDeciderStopped = true;
  await system.inboundDecider!.stop();
}

describe('inbound SMS while the projector is stopped', () => {
  it('answers every one of 100 (one of them STOP) and a delivery report at once, stores each once afterwards, and sends nothing to the number that opted out', async () => {
    const account = await newAccount();
    const stopper = '+15125556050';
    expect((await acme.post(`/accounts/${account.id}/leads`, { phone: stopper })).status).toBe(201);

    // A message sent before the lag, whose delivery report arrives during it.
    const reported = '+15125556051';
    await acme.post(`/accounts/${account.id}/leads`, { phone: reported });
    const sent = await acme.post(`/accounts/${account.id}/conversations/${reported}/messages`, {
      body: 'Your documents are in.',
    });
    expect(sent.status).toBe(200);
    expect(await settledByGateway(sent.body.message_id)).toBe('sent');
    const atTwilio = sentTo(reported)[0]!;

    await projector!.stop();
    projector = undefined;
    // Twilio requests the URL it was given, without the fragment.
    const callback = atTwilio.statusCallback!.slice(system.publicUrl.length).split('#')[0]!;
    const report = {
      MessageSid: atTwilio.sid,
      MessageStatus: 'delivered',
      AccountSid: twilio.accountSid,
      To: reported,
    };
    const reportAnswer = await system.app.inject({
      method: 'POST',
      url: callback,
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': twilioSignature(twilio.authToken, `${system.publicUrl}${callback}`, report),
      },
      payload: new URLSearchParams(report).toString(),
    });
    expect(reportAnswer.statusCode).toBe(200);
    const answers: { status: number; ms: number; sid: string }[] = [];
    let queued: string | undefined;
    let manualDuringLag: { status: number; body: { code?: string } } | undefined;
    // 100 messages over about 30 s, as a busy number receives them, from 100 phones; the 51st is a STOP.
    for (let i = 0; i < 100; i++) {
      const from = i === 50 ? stopper : `+1512555${String(7000 + i)}`;
      answers.push(await inboundSms(account.number, from, i === 50 ? 'STOP' : `Message ${i}`));
      if (i === 50) {
        queued = await queueSend(account, stopper);
        manualDuringLag = await acme.post(`/accounts/${account.id}/conversations/${stopper}/messages`, {
          body: 'Did you get my last text?',
        });
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    const latencies = answers.map((answer) => answer.ms).sort((a, b) => a - b);
    console.warn(
      `inbound SMS with the projector stopped: ${answers.length} answered, median ${latencies[49]!.toFixed(1)} ms, ` +
        `p99 ${latencies[98]!.toFixed(1)} ms, max ${latencies[99]!.toFixed(1)} ms`,
    );
    expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);
    // Deciding a send needs caught-up read models: refused, nothing written.
    expect(manualDuringLag).toMatchObject({ status: 503, body: { code: 'projection_lagging' } });

    await startOurProjector();
    const stored = await eventually(
      async () => {
        const rows = await system.services.db
          .selectFrom('messages')
          .select('provider_message_id')
          .where(
            'provider_message_id',
            'in',
            answers.map((answer) => answer.sid),
          )
          .execute();
        return rows.length === 100 ? rows : undefined;
      },
      { timeoutMs: 120_000, message: 'the 100 inbound SMS were never all stored' },
    );
    expect(new Set(stored.map((row) => row.provider_message_id)).size).toBe(100);
    expect(await optedOut(account.id, stopper)).toBe(true);
    await eventually(async () => {
      const message = await system.services.db
        .selectFrom('messages')
        .select('status')
        .where('id', '=', sent.body.message_id)
        .executeTakeFirst();
      return message?.status === 'delivered' ? true : undefined;
    });

    // The send queued behind the STOP was refused; a manual one is refused too.
    expect(await settledByGateway(queued!)).toBe('failed');
    const manual = await acme.post(`/accounts/${account.id}/conversations/${stopper}/messages`, {
      body: 'Hello?',
    });
    expect(manual).toMatchObject({ status: 409, body: { code: 'lead_opted_out' } });
    // Twilio got the STOP confirmation, and nothing else, for that number.
    await eventually(async () => (sentTo(stopper).length > 0 ? true : undefined), { timeoutMs: 30_000 });
    expect(sentTo(stopper).map((message) => message.body)).toEqual([
      'Sunrise Mortgage: You are unsubscribed and will receive no more messages. Reply START to resubscribe.',
    ]);
  }, 240_000);
});

describe('an opt-out answered but not yet decided', () => {
  it('refuses every send to the number from the moment Twilio is answered, until the decision takes over', async () => {
    const account = await newAccount('Harbor Loans');
    const phone = '+15125556060';
    expect((await acme.post(`/accounts/${account.id}/leads`, { phone })).status).toBe(201);
    // The decider is down: nothing about the STOP is decided yet.
    await stopSystemDecider();

    // Punctuated, as people type it: still the keyword, guarded from the moment Twilio is answered.
    const stop = await inboundSms(account.number, phone, 'Stop.');
    expect(stop.status).toBe(200);
    expect(await optedOut(account.id, phone)).toBe(false);
    const manual = await acme.post(`/accounts/${account.id}/conversations/${phone}/messages`, { body: 'Hi' });
    expect(manual).toMatchObject({ status: 409, body: { code: 'lead_opted_out' } });
    const queued = await queueSend(account, phone);
    expect(await settledByGateway(queued)).toBe('failed');
    expect(sentTo(phone)).toEqual([]);

    const decider = await startTestInboundDecider(system, { db: deciderDb });
    try {
      await system.inboundDecided(stop.sid, { timeoutMs: 60_000 });
      expect(await optedOut(account.id, phone)).toBe(true);
      // The read models say it now; the guard has served its purpose.
      await eventually(async () => {
        const guard = await system.services.db
          .selectFrom('opt_out_guards')
          .select('phone')
          .where('account_id', '=', account.id)
          .executeTakeFirst();
        return guard ? undefined : true;
      });
      expect(
        (await acme.post(`/accounts/${account.id}/conversations/${phone}/messages`, { body: 'Hi' })).body
          .code,
      ).toBe('lead_opted_out');

      // Redelivered and posted to another account at the same moment: stored once, in one account.
      const other = await newAccount('Other Lender');
      const sid = nextSid();
      const sender = '+15125556070';
      const answers = await Promise.all([
        inboundSms(account.number, sender, 'Is this Harbor?', sid),
        inboundSms(other.number, sender, 'Is this Harbor?', sid),
        inboundSms(account.number, sender, 'Is this Harbor?', sid),
      ]);
      expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
      await system.inboundDecided(sid, { timeoutMs: 60_000 });
      // Every raw fact on the log has been through the decider.
      await eventually(async () => {
        const offsets = await system.services.admin.fetchTopicOffsets(system.services.topics.account);
        const checkpoints = await system.services.db
          .selectFrom('inbound_decider_checkpoints')
          .select(['partition', 'next_offset'])
          .execute();
        return offsets.every(
          (entry) =>
            entry.high === '0' ||
            checkpoints.some(
              (row) => row.partition === entry.partition && BigInt(row.next_offset) >= BigInt(entry.high),
            ),
        )
          ? true
          : undefined;
      });
      const rows = await storedWithSid(sid);
      expect(rows).toHaveLength(1);
      const owner = rows[0]!.account_id;
      const elsewhere = owner === account.id ? other.id : account.id;
      expect((await acme.get(`/accounts/${owner}/leads/${sender}`)).status).toBe(200);
      expect((await acme.get(`/accounts/${elsewhere}/leads/${sender}`)).status).toBe(404);
      const { conversations } = (await acme.get(`/accounts/${elsewhere}/conversations`)).body;
      expect(conversations.map((conversation: { phone: string }) => conversation.phone)).not.toContain(
        sender,
      );
    } finally {
      await decider.stop();
    }
  }, 180_000);
});

describe('a burst of inbound SMS decided together', () => {
  it('decides each account’s burst in order, each message seeing the ones before it, and stores a duplicated MessageSid once', async () => {
    const first = await newAccount('Lakeside Lending');
    const second = await newAccount('Summit Homes');
    const known = '+15125556101';
    const stranger = '+15125556102';
    const flipper = '+15125556103';
    expect((await acme.post(`/accounts/${first.id}/leads`, { phone: known })).status).toBe(201);
    // Nothing is decided while the burst arrives, so the decider finds it all in one batch.
    await stopSystemDecider();

    const sent: { account: { id: string; number: string }; from: string; body: string; sid: string }[] = [];
    const post = async (account: { id: string; number: string }, from: string, body: string) => {
      const answer = await inboundSms(account.number, from, body);
      expect(answer.status).toBe(200);
      sent.push({ account, from, body, sid: answer.sid });
    };
    // Interleaved across the two accounts and three senders, as a busy moment delivers them.
    await post(first, known, 'STOP');
    await post(first, stranger, 'Hi, is this Lakeside?');
    await post(second, flipper, 'START');
    await post(first, known, 'one more thing');
    await post(second, flipper, 'stop!!');
    await post(first, stranger, 'I saw your ad');
    await post(first, known, 'START');
    await post(second, flipper, 'STOP');
    await post(first, stranger, 'Call me back please');
    await post(second, flipper, 'are you still there?');
    await post(first, known, 'thanks');
    // The same MessageSid kept twice on the log (two racing webhook answers both append).
    const twice = sent.find((message) => message.body === 'I saw your ad')!;
    const fact = await system.services.db
      .selectFrom('accounts')
      .select('partner_id')
      .where('id', '=', first.id)
      .executeTakeFirstOrThrow();
    await system.services.commands.append({
      stream: { topic: 'account', accountId: first.id },
      context: {
        partnerId: fact.partner_id,
        actor: { kind: 'system', service: 'twilio-inbound' },
        correlationId: twice.sid,
      },
      events: [
        {
          type: 'message.inbound_received',
          data: {
            provider_message_id: twice.sid,
            phone: stranger,
            to: first.number,
            body: twice.body,
            media: [],
          },
        },
      ],
      readYourWrites: false,
    });
    expect(await storedWithSid(sent[0]!.sid)).toEqual([]);

    const decider = await startTestInboundDecider(system, { db: deciderDb });
    try {
      for (const message of sent) await system.inboundDecided(message.sid, { timeoutMs: 60_000 });

      // Every message stored once, in the account it was sent to.
      for (const message of sent) {
        expect(await storedWithSid(message.sid)).toEqual([
          { account_id: message.account.id, phone: message.from },
        ]);
      }
      // Each stored message is traced on the log to its own inbound fact, though decided in a batch.
      const log = (await accountEvents(system.services)).filter((event) =>
        [first.id, second.id].includes(event.account_id ?? ''),
      );
      const facts = log.flatMap((event) => (event.type === 'message.inbound_received' ? [event] : []));
      const received = log.flatMap((event) => (event.type === 'message.received' ? [event] : []));
      expect(received).toHaveLength(sent.length);
      for (const event of received) {
        const causes = facts.filter((f) => f.data.provider_message_id === event.data.provider_message_id);
        expect(causes.map((cause) => cause.id)).toContain(event.causation_id);
      }
      // Each conversation lists its messages in the order they arrived (newest first).
      const bodiesOf = async (account: { id: string }, phone: string) =>
        (await acme.get(`/accounts/${account.id}/conversations/${phone}/messages?limit=50`)).body.messages
          .filter((message: { direction: string }) => message.direction === 'inbound')
          .map((message: { body: string }) => message.body)
          .reverse();
      const arrived = (account: { id: string }, phone: string) =>
        sent.filter((message) => message.account === account && message.from === phone).map((m) => m.body);
      expect(await bodiesOf(first, known)).toEqual(arrived(first, known));
      expect(await bodiesOf(first, stranger)).toEqual(arrived(first, stranger));
      expect(await bodiesOf(second, flipper)).toEqual(arrived(second, flipper));

      // The unknown sender who texted three times became one lead, with one conversation.
      const lead = await acme.get(`/accounts/${first.id}/leads/${stranger}`);
      expect(lead.status).toBe(200);
      const leads = (await acme.get(`/accounts/${first.id}/leads?limit=100`)).body.leads as {
        phone: string;
      }[];
      expect(leads.filter((entry) => entry.phone === stranger)).toHaveLength(1);
      const { conversations } = (await acme.get(`/accounts/${first.id}/conversations`)).body;
      expect(
        conversations.filter((conversation: { phone: string }) => conversation.phone === stranger),
      ).toHaveLength(1);

      // STOP, a text, then START: opted back in, each keyword confirmed once, in order.
      expect(await optedOut(first.id, known)).toBe(false);
      await eventually(async () => (sentTo(known).length >= 2 ? true : undefined), { timeoutMs: 30_000 });
      expect(sentTo(known).map((message) => message.body)).toEqual([
        'Lakeside Lending: You are unsubscribed and will receive no more messages. Reply START to resubscribe.',
        'Lakeside Lending: You are resubscribed and will receive messages again. Reply STOP to unsubscribe.',
      ]);
      // START while subscribed does nothing; the second STOP finds the number already opted out.
      expect(await optedOut(second.id, flipper)).toBe(true);
      await eventually(async () => (sentTo(flipper).length >= 1 ? true : undefined), { timeoutMs: 30_000 });
      expect(sentTo(flipper).map((message) => message.body)).toEqual([
        'Summit Homes: You are unsubscribed and will receive no more messages. Reply START to resubscribe.',
      ]);
      const manual = await acme.post(`/accounts/${second.id}/conversations/${flipper}/messages`, {
        body: 'Hello?',
      });
      expect(manual).toMatchObject({ status: 409, body: { code: 'lead_opted_out' } });
      // Once the decisions are in the read models, no opt-out guard is left behind.
      await eventually(async () => {
        const guards = await system.services.db
          .selectFrom('opt_out_guards')
          .select('phone')
          .where('account_id', 'in', [first.id, second.id])
          .execute();
        return guards.length === 0 ? true : undefined;
      });
      // The later messages of the one who opted back in reach the manual-message path again.
      const again = await acme.post(`/accounts/${first.id}/conversations/${known}/messages`, {
        body: 'Glad to have you back.',
      });
      expect(again.status).toBe(200);
    } finally {
      await decider.stop();
    }
  }, 240_000);
});
