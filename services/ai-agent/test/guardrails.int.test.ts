import { newUuid } from '@leadline/runtime';
import { accountEvents, eventually, fakeClock } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  aiMessages,
  handled,
  inbound,
  messageIdOf,
  messagesOf,
  newAccount,
  pendingMessageCount,
  startAgentSystem,
  type AgentSystem,
} from './harness';

const clock = fakeClock(new Date());
let world: AgentSystem;
beforeAll(async () => {
  // The reply delay counts on the injected clock: a burst is answered when the test moves it.
  world = await startAgentSystem({ clock, agent: { replyDelayMs: 5_000 } });
});
afterAll(() => world?.close());

const pendingCount = (phone: string) => pendingMessageCount(world.system, phone);

describe('answering', () => {
  it('answers a burst of three messages once, after the quiet time', async () => {
    const { system, partner } = world;
    const account = await newAccount(partner, [{ name: 'Email', type: 'email' }]);
    const phone = '+15125550201';
    const sids = [
      await inbound(system, account.number, phone, 'Hi'),
      await inbound(system, account.number, phone, 'I saw your ad'),
      await inbound(system, account.number, phone, 'my email is burst@example.com'),
    ];
    await eventually(async () => ((await pendingCount(phone)) === 3 ? true : undefined));
    expect((await messagesOf(partner, account.id, phone)).filter((m) => m.direction === 'outbound')).toEqual(
      [],
    );

    clock.advance(5_000);
    const [reply] = await aiMessages(partner, account.id, phone, 1);
    await handled(system, account.id, await Promise.all(sids.map((sid) => messageIdOf(system, sid))));
    expect(reply!.body).toBe('Thank you! We have everything we need. Sunrise will be in touch soon.');
    clock.advance(60_000);
    await world.agents[0]!.work();
    expect((await messagesOf(partner, account.id, phone)).filter((m) => m.source === 'ai')).toHaveLength(1);
  });

  it("traces each reply to the message it answers when one account's turns are recorded together", async () => {
    const { system, partner } = world;
    const account = await newAccount(partner);
    const phones = ['+15125550211', '+15125550212', '+15125550213', '+15125550214'];
    const sids = await Promise.all(phones.map((phone) => inbound(system, account.number, phone, 'Hi there')));
    for (const phone of phones) await eventually(async () => (await pendingCount(phone)) === 1 || undefined);

    // All four fall due at once: they are decided side by side, and recorded in shared commands.
    clock.advance(5_000);
    const messageIds = await Promise.all(sids.map((sid) => messageIdOf(system, sid)));
    await handled(system, account.id, messageIds);

    const events = (await accountEvents(system.services)).filter((event) => event.account_id === account.id);
    for (const phone of phones) {
      const received = events.find(
        (event) => event.type === 'message.received' && event.data.phone === phone,
      )!;
      const answered = events.filter(
        (event) =>
          (event.type === 'ai.turn_completed' ||
            (event.type === 'message.outbound_requested' && event.data.source === 'ai')) &&
          event.data.phone === phone,
      );
      expect(answered.map((event) => event.type).sort()).toEqual([
        'ai.turn_completed',
        'message.outbound_requested',
      ]);
      for (const event of answered) {
        expect([event.correlation_id, event.causation_id]).toEqual([received.correlation_id, received.id]);
      }
    }
  });

  it('answers a burst once when the log is redelivered and a second agent runs', async () => {
    const { system, partner } = world;
    const account = await newAccount(partner);
    const phone = '+15125550202';
    const sid = await inbound(system, account.number, phone, 'Hello there');
    clock.advance(5_000);
    await aiMessages(partner, account.id, phone, 1);
    const messageId = await messageIdOf(system, sid);
    await handled(system, account.id, [messageId]);

    // The same record again on the log (an at-least-once producer), then an agent that starts over
    // from offset 0 beside the running one.
    const original = (await accountEvents(system.services)).find(
      (event) => event.type === 'message.received' && event.data.message_id === messageId,
    )!;
    await system.services.commands.append({
      stream: { topic: 'account', accountId: account.id },
      context: {
        partnerId: original.partner_id,
        actor: original.actor,
        correlationId: original.correlation_id,
      },
      events: [
        {
          type: 'message.received',
          data: original.type === 'message.received' ? original.data : (undefined as never),
        },
      ],
    });
    await system.services.db.deleteFrom('ai_agent_checkpoints').execute();
    const second = await world.startAgent({
      groupId: `${system.env.config.TOPIC_PREFIX}ai-agent-second-${newUuid()}`,
    });
    // The second agent has read the whole log, the copy included, before the clock moves.
    const { admin, db, topics } = system.services;
    const ends = (await admin.fetchTopicOffsets(topics.account)).filter((entry) => Number(entry.high) > 0);
    await eventually(async () => {
      const rows = await db.selectFrom('ai_agent_checkpoints').selectAll().execute();
      const read = ends.every(({ partition, high }) =>
        rows.some(
          (row) =>
            row.topic === topics.account &&
            row.partition === partition &&
            BigInt(row.next_offset) >= BigInt(high),
        ),
      );
      return read ? true : undefined;
    });
    clock.advance(60_000);
    await Promise.all([second.work(), world.agents[0]!.work()]);
    await eventually(async () => ((await pendingCount(phone)) === 0 ? true : undefined));
    expect((await messagesOf(partner, account.id, phone)).filter((m) => m.source === 'ai')).toHaveLength(1);
  });
});

describe('staying quiet', () => {
  it('does not answer keywords, a paused AI, an opted-out number or a deactivated account', async () => {
    const { system, partner } = world;
    const account = await newAccount(partner);
    const paused = '+15125550203';
    const optedOut = '+15125550204';

    // Paused: a manual message pauses the AI in that conversation.
    await partner.post(`/accounts/${account.id}/leads`, { phone: paused });
    await partner.post(`/accounts/${account.id}/conversations/${encodeURIComponent(paused)}/messages`, {
      body: 'Hi, Sam here',
    });
    const pausedSid = await inbound(system, account.number, paused, 'Hello Sam');

    // Opted out: STOP gets the compliance reply only; what follows gets nothing.
    const stopSid = await inbound(system, account.number, optedOut, 'STOP');
    const afterStopSid = await inbound(system, account.number, optedOut, 'actually, one question');
    const helpSid = await inbound(system, account.number, '+15125550205', 'HELP');

    clock.advance(5_000);
    await handled(system, account.id, [
      await messageIdOf(system, pausedSid),
      await messageIdOf(system, afterStopSid),
    ]);
    await messageIdOf(system, stopSid);
    await messageIdOf(system, helpSid);
    await world.agents[0]!.work();

    // Deactivated: the account's inbound messages are stored, never answered.
    await partner.delete(`/accounts/${account.id}`);
    const lateSid = await inbound(system, account.number, '+15125550206', 'anyone there?');
    clock.advance(5_000);
    await handled(system, account.id, [await messageIdOf(system, lateSid)]);

    for (const phone of [paused, optedOut, '+15125550205', '+15125550206']) {
      const sources = (await messagesOf(partner, account.id, phone))
        .filter((m) => m.direction === 'outbound')
        .map((m) => m.source);
      expect(sources.filter((source) => source === 'ai')).toEqual([]);
    }
    const turns = (await accountEvents(system.services)).flatMap((event) =>
      event.type === 'ai.turn_completed' && event.account_id === account.id ? [event.data.reason] : [],
    );
    expect(turns.sort()).toEqual(['account_deactivated', 'ai_paused', 'lead_opted_out']);
  });

  it('does not answer a number whose STOP was answered but is not decided yet', async () => {
    const { system, partner } = world;
    const account = await newAccount(partner);
    const phone = '+15125550209';
    // The STOP was answered to Twilio (the guard is written then); its decision is still queued.
    await system.services.db
      .insertInto('opt_out_guards')
      .values({ account_id: account.id, phone, message_sid: `SM${newUuid()}`, created_at: clock.now() })
      .execute();
    const sid = await inbound(system, account.number, phone, 'actually, one question');
    clock.advance(5_000);
    await handled(system, account.id, [await messageIdOf(system, sid)]);

    expect((await messagesOf(partner, account.id, phone)).filter((m) => m.direction === 'outbound')).toEqual(
      [],
    );
    const turns = (await accountEvents(system.services)).flatMap((event) =>
      event.type === 'ai.turn_completed' && event.account_id === account.id
        ? [[event.data.outcome, event.data.reason]]
        : [],
    );
    expect(turns).toEqual([['skipped', 'lead_opted_out']]);
    await system.services.db.deleteFrom('opt_out_guards').where('account_id', '=', account.id).execute();
  });

  it('sends at most the daily number of AI messages to a lead', async () => {
    const { system, partner } = world;
    // One a day: the first message is answered, the second (counted against the first reply) is not.
    const capped = await world.startAgent({
      groupId: `${system.env.config.TOPIC_PREFIX}ai-agent-capped-${newUuid()}`,
      maxMessagesPerLeadPerDay: 1,
    });
    await world.agents[0]!.stop();
    world.agents.shift();
    const account = await newAccount(partner);
    const phone = '+15125550207';
    const aiReplies = async () =>
      (await messagesOf(partner, account.id, phone)).filter((m) => m.source === 'ai');

    const first = await inbound(system, account.number, phone, 'Hi');
    clock.advance(5_000);
    await capped.work();
    await handled(system, account.id, [await messageIdOf(system, first)]);
    await eventually(async () => ((await aiReplies()).length === 1 ? true : undefined));

    const second = await inbound(system, account.number, phone, 'Are you there?');
    clock.advance(5_000);
    await capped.work();
    await handled(system, account.id, [await messageIdOf(system, second)]);
    expect(await aiReplies()).toHaveLength(1);
  });
});
