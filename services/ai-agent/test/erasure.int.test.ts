import { createPostgresDocumentStore } from '@leadline/runtime';
import { accountEvents, eventually, fakeClock } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  aiMessages,
  inbound,
  newAccount,
  pendingMessageCount,
  PNG,
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
/** The lead's documents, their bytes as the store opens them (sealed at rest). */
async function documentsOf(phone: string) {
  const { db, personalDataKeys } = world.system.services;
  const store = createPostgresDocumentStore(db, personalDataKeys);
  const rows = await db.selectFrom('documents').select('id').where('phone', '=', phone).execute();
  return Promise.all(rows.map(async ({ id }) => ({ id, bytes: await store.get(id) })));
}

describe('erasing a lead in the AI agent', () => {
  it('forgets the documents the lead sent and what it texted before it was answered, and never answers it; another lead keeps its own', async () => {
    const { system, partner, media } = world;
    const account = await newAccount(partner, [{ name: 'Photo ID', type: 'document' }]);
    const erasedPhone = '+15125550301';
    const otherPhone = '+15125550302';
    for (const phone of [erasedPhone, otherPhone])
      await inbound(system, account.number, phone, '', [
        { url: media.host(PNG, 'image/png'), type: 'image/png' },
      ]);
    for (const phone of [erasedPhone, otherPhone])
      await eventually(async () => ((await pendingMessageCount(system, phone)) === 1 ? true : undefined));
    clock.advance(5_000);
    for (const phone of [erasedPhone, otherPhone]) {
      await aiMessages(partner, account.id, phone, 1);
      expect(await documentsOf(phone)).toEqual([{ id: expect.any(String), bytes: PNG }]);
    }
    await inbound(system, account.number, erasedPhone, 'My SSN ends in 4417, call me');
    await inbound(system, account.number, otherPhone, 'Is that enough?');
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
        (await pendingTurns(erasedPhone)).length === 0 &&
        (await documentsOf(erasedPhone)).length === 0
          ? true
          : undefined,
      { message: "the erased lead's pending message, turn or document is still kept" },
    );
    expect(await pendingMessageCount(system, otherPhone)).toBe(1);
    expect(await pendingTurns(otherPhone)).toHaveLength(1);
    expect(await documentsOf(otherPhone)).toEqual([{ id: expect.any(String), bytes: PNG }]);

    clock.advance(5_000);
    await aiMessages(partner, account.id, otherPhone, 2);
    clock.advance(60_000);
    await world.agents[0]!.work();
    // What was requested before the erasure reads as erased now; nothing after it went to the lead.
    const answeredTo = async (phone: string) =>
      (await accountEvents(system.services)).filter(
        (event) =>
          event.account_id === account.id &&
          event.type === 'message.outbound_requested' &&
          event.data.source === 'ai' &&
          event.data.phone === phone,
      );
    expect(await answeredTo(erasedPhone)).toEqual([]);
    expect(await answeredTo(otherPhone)).toHaveLength(2);
  });
});
