import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawLogText } from '@leadline/test-kit';
import { aiMessages, inbound, newAccount, PNG, startAgentSystem, type AgentSystem } from './harness';

let world: AgentSystem;
beforeAll(async () => {
  world = await startAgentSystem();
});
afterAll(() => world?.close());

const PHONE = '+15125550177';
const lead = {
  phone: PHONE,
  name: 'Zelda Quillfeather',
  email: 'zelda.quill@example.net',
  notes: 'Prefers evening calls about the Maple Street refinance',
  metadata: { loan_reference: 'LR-77341-QX' },
};
const manualBody = 'Hello Zelda, your rate lock expires on Friday';
// The staff member a manual message goes under is a person too.
const senderName = 'Ottoline Brackwater';
const inboundBody = 'sure, it is Zelda.Inbox@Example.com';
const extractedValue = 'zelda.inbox@example.com';

/** Every byte of this file's log, as Latin-1 text. */
const rawLog = () => rawLogText(world.system.services, world.system.env.config.TOPIC_PREFIX);

describe('personal data on the log', () => {
  it("holds none of a lead's values in clear, and the API still reads them all", async () => {
    const { system, partner, media } = world;
    const account = await newAccount(partner, [
      { name: 'Email', type: 'email' },
      { name: 'Photo ID', type: 'document' },
    ]);
    const created = await partner.post(`/accounts/${account.id}/leads`, lead);
    expect(created.status).toBe(201);
    const conversation = `/accounts/${account.id}/conversations/${encodeURIComponent(PHONE)}`;
    const sent = await partner.post(`${conversation}/messages`, {
      body: manualBody,
      sender_name: senderName,
    });
    expect(sent.status).toBe(200);
    // A manual message pauses the AI; the agent collects the checklist once it is resumed.
    expect((await partner.post(`${conversation}/resume-ai`, {})).status).toBe(200);
    await inbound(system, account.number, PHONE, inboundBody);
    await aiMessages(partner, account.id, PHONE, 1);
    await inbound(system, account.number, PHONE, '', [
      { url: media.host(PNG, 'image/png'), type: 'image/png' },
    ]);
    await aiMessages(partner, account.id, PHONE, 2);

    // Everything is readable through the API, opened from the log by the projector.
    const read = (await partner.get(`/accounts/${account.id}/leads/${encodeURIComponent(PHONE)}`)).body;
    expect(read).toMatchObject({ name: lead.name, email: lead.email, metadata: lead.metadata });
    expect(read.checklist.items[0]).toMatchObject({ status: 'completed', value: extractedValue });
    expect(read.checklist.items[1]).toMatchObject({ status: 'completed' });
    const messages = (await partner.get(`${conversation}/messages`)).body.messages;
    expect(messages).toContainEqual(expect.objectContaining({ body: manualBody, sender_name: senderName }));

    // The document's bytes are sealed at rest too; its link still serves the PNG.
    const stored = await system.services.db
      .selectFrom('documents')
      .select(['bytes', 'text_content'])
      .where('account_id', '=', account.id)
      .execute();
    expect(stored).toHaveLength(1);
    expect(stored[0]!.bytes!.includes(PNG)).toBe(false);
    expect(stored[0]!.bytes!.subarray(0, 6).toString()).toBe('LLDOC1');
    const fileUrl = new URL(read.checklist.items[1].file_url);
    const file = await system.app.inject({ method: 'GET', url: `${fileUrl.pathname}${fileUrl.search}` });
    expect(file.rawPayload.equals(PNG)).toBe(true);

    const log = await rawLog();
    expect(log).toContain('sealed:1:');
    const clear = [
      PHONE,
      PHONE.slice(2),
      lead.name,
      'Quillfeather',
      lead.email,
      lead.notes,
      lead.metadata.loan_reference,
      manualBody,
      senderName,
      'Zelda.Inbox',
      extractedValue,
    ];
    expect(clear.filter((value) => log.toLowerCase().includes(value.toLowerCase()))).toEqual([]);
  });
});
