import { newUuid } from '@leadline/runtime';
import { eventually, fakeClock } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountEvents } from '../../command-api/test/log';
import {
  aiMessages,
  handled,
  inbound,
  messageIdOf,
  messagesOf,
  newAccount,
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

const pendingCount = (phone: string) =>
  world.system.services.db
    .selectFrom('ai_pending_messages')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .where('phone', '=', phone)
    .executeTakeFirstOrThrow()
    .then((row) => Number(row.count));

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
    await eventually(async () => {
      const rows = await system.services.db.selectFrom('ai_agent_checkpoints').selectAll().execute();
      return rows.length > 0 ? true : undefined;
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

  it('sends at most the daily number of AI messages to a lead', async () => {
    const { system, partner } = world;
    const capped = await world.startAgent({
      groupId: `${system.env.config.TOPIC_PREFIX}ai-agent-capped-${newUuid()}`,
      maxMessagesPerLeadPerDay: 0,
    });
    await world.agents[0]!.stop();
    world.agents.shift();
    const account = await newAccount(partner);
    const phone = '+15125550207';
    const sid = await inbound(system, account.number, phone, 'Hi');
    clock.advance(5_000);
    await capped.work();
    await handled(system, account.id, [await messageIdOf(system, sid)]);
    expect((await messagesOf(partner, account.id, phone)).filter((m) => m.source === 'ai')).toEqual([]);
  });
});
