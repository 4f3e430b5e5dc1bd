import { eventually, fakeClock } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountEvents } from '../../command-api/test/log';
import {
  aiMessages,
  inbound,
  newAccount,
  pendingMessageCount,
  startAgentSystem,
  type AgentSystem,
} from './harness';

const clock = fakeClock(new Date());
let world: AgentSystem;
beforeAll(async () => {
  // The reply delay counts on the injected clock: what was texted waits in the queue until the test moves it.
  world = await startAgentSystem({ clock, agent: { replyDelayMs: 5_000 } });
});
afterAll(() => world?.close());

const pendingTurns = (phone: string) =>
  world.system.services.db.selectFrom('ai_pending_turns').select('id').where('phone', '=', phone).execute();

describe('erasing a lead in the AI agent', () => {
  it('forgets what the lead texted before it was answered and never answers it; another lead is answered', async () => {
    const { system, partner } = world;
    const account = await newAccount(partner);
    const erasedPhone = '+15125550301';
    const otherPhone = '+15125550302';
    await inbound(system, account.number, erasedPhone, 'My SSN ends in 4417, call me');
    await inbound(system, account.number, otherPhone, 'Hi, I saw your ad');
    for (const phone of [erasedPhone, otherPhone])
      await eventually(async () => ((await pendingMessageCount(system, phone)) === 1 ? true : undefined));

    // The erasure as the partner API makes it: the event, and the subject's key destroyed.
    const { partner_id: partnerId } = await system.services.db
      .selectFrom('accounts')
      .select('partner_id')
      .where('id', '=', account.id)
      .executeTakeFirstOrThrow();
    const keys = system.services.personalDataKeys;
    const subject = keys.subjectOf(account.id, 'lead', erasedPhone);
    await system.services.commands.append({
      stream: { topic: 'account', accountId: account.id },
      context: { partnerId, actor: { kind: 'system', service: 'test' }, correlationId: 'erasure' },
      events: [{ type: 'lead.erased', data: { lead_id: null, phone: erasedPhone, subject } }],
    });
    await keys.eraseSubject(account.id, subject);

    await eventually(
      async () =>
        (await pendingMessageCount(system, erasedPhone)) === 0 &&
        (await pendingTurns(erasedPhone)).length === 0
          ? true
          : undefined,
      { message: "the erased lead's pending message and turn are still queued" },
    );
    expect(await pendingMessageCount(system, otherPhone)).toBe(1);
    expect(await pendingTurns(otherPhone)).toHaveLength(1);

    clock.advance(5_000);
    await aiMessages(partner, account.id, otherPhone, 1);
    clock.advance(60_000);
    await world.agents[0]!.work();
    const answered = (await accountEvents(system.services)).filter(
      (event) =>
        event.account_id === account.id &&
        event.type === 'message.outbound_requested' &&
        event.data.source === 'ai',
    );
    expect(answered.map((event) => event.type === 'message.outbound_requested' && event.data.phone)).toEqual([
      otherPhone,
    ]);
  });
});
