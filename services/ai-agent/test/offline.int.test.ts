import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountEvents } from '@leadline/test-kit';
import {
  aiMessages,
  inbound,
  messagesOf,
  newAccount,
  PNG,
  startAgentSystem,
  turnSettled,
  type AgentSystem,
} from './harness';

let world: AgentSystem;
beforeAll(async () => {
  world = await startAgentSystem();
});
afterAll(() => world?.close());

const LEAD = '+15125550101';

describe('the offline responder (no OPENAI_API_KEY)', () => {
  it('collects a three-item checklist end to end, one item at a time, and qualifies the lead', async () => {
    const { system, partner, media } = world;
    const account = await newAccount(partner, [
      { name: 'Email', type: 'email' },
      { name: 'Date of birth', type: 'date' },
      { name: 'Photo ID', type: 'document' },
    ]);
    await inbound(system, account.number, LEAD, 'Hi, I applied for a loan');
    const [first] = await aiMessages(partner, account.id, LEAD, 1);
    expect(first!.body).toBe('Could you send me your Email?');

    await inbound(system, account.number, LEAD, 'sure, it is Ana@Example.com');
    const second = await aiMessages(partner, account.id, LEAD, 2);
    expect(second[1]!.body).toBe('Thanks! Could you send me your Date of birth?');

    await inbound(system, account.number, LEAD, 'born 04/01/1990');
    const third = await aiMessages(partner, account.id, LEAD, 3);
    expect(third[2]!.body).toBe('Thanks! Could you send a photo or PDF of your Photo ID?');

    await inbound(system, account.number, LEAD, '', [
      { url: media.host(PNG, 'text/html'), type: 'text/html' },
    ]);
    const fourth = await aiMessages(partner, account.id, LEAD, 4);
    expect(fourth[3]!.body).toBe('Thank you! We have everything we need. Sunrise will be in touch soon.');

    const checklist = (
      await partner.get(`/accounts/${account.id}/leads/${encodeURIComponent(LEAD)}/checklist`)
    ).body;
    expect(checklist).toMatchObject({ completed_count: 3, total_count: 3, progress: 1 });
    expect(
      checklist.checklist.map((item: { name: string; value?: string }) => [item.name, item.value]),
    ).toEqual([
      ['Email', 'ana@example.com'],
      ['Date of birth', '1990-04-01'],
      ['Photo ID', undefined],
    ]);
    // The photo was declared as HTML; it is sniffed, stored and served as the PNG it is.
    const fileUrl = new URL(checklist.checklist[2].file_url);
    const file = await system.app.inject({ method: 'GET', url: `${fileUrl.pathname}${fileUrl.search}` });
    expect(file.statusCode).toBe(200);
    expect(file.headers['content-type']).toBe('image/png');
    expect(file.rawPayload.equals(PNG)).toBe(true);
    // One character of the signature changed (to another character: never the same one by chance).
    const tamperedSearch = fileUrl.search.replace(
      /signature=(.)/,
      (_, first: string) => `signature=${first === '0' ? '1' : '0'}`,
    );
    const tampered = await system.app.inject({ method: 'GET', url: `${fileUrl.pathname}${tamperedSearch}` });
    expect(tampered.statusCode).toBe(404);

    const lead = (await partner.get(`/accounts/${account.id}/leads/${encodeURIComponent(LEAD)}`)).body;
    expect(lead.status).toBe('qualified');
    expect(lead.checklist.items[0]).toMatchObject({
      name: 'Email',
      status: 'completed',
      value: 'ana@example.com',
    });
    expect(lead.conversation.summary).toContain('Checklist complete.');
    expect((await partner.get(`/accounts/${account.id}/leads`)).body.leads[0].checklist_progress).toBe(1);
    const usage = (await partner.get(`/usage?account_id=${account.id}`)).body;
    expect(usage.totals.documents_collected).toBe(1);

    const events = (await accountEvents(system.services)).filter((event) => event.account_id === account.id);
    expect(events.filter((event) => event.type === 'checklist.item_collected')).toHaveLength(3);
    expect(events.filter((event) => event.type === 'checklist.completed')).toHaveLength(1);
    expect(
      events.filter((event) => event.type === 'lead.status_changed').map((event) => event.data.new_status),
    ).toEqual(['contacted', 'qualified']);
  });

  it('hands off when the lead asks for a person, and says so once', async () => {
    const { system, partner } = world;
    const account = await newAccount(partner, [{ name: 'Email', type: 'email' }]);
    const ask = await inbound(system, account.number, '+15125550102', 'Can I talk to a real person please');
    const [reply] = await aiMessages(partner, account.id, '+15125550102', 1);
    await turnSettled(system, account.id, ask);
    expect(reply!.body).toContain('Someone from Sunrise will follow up');
    const conversations = (await partner.get(`/accounts/${account.id}/conversations?needs_handoff=true`))
      .body;
    expect(conversations.conversations.map((c: { phone: string }) => c.phone)).toEqual(['+15125550102']);
    // Once handed off, the AI stays quiet until a human resumes it.
    await turnSettled(system, account.id, await inbound(system, account.number, '+15125550102', 'hello?'));
    const messages = await messagesOf(partner, account.id, '+15125550102');
    expect(messages.filter((message) => message.source === 'ai')).toHaveLength(1);
  });
});
