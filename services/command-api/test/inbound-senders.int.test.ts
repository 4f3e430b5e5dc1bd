import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logSize } from '@leadline/test-kit';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';
import { postInboundSms } from '../../../system-test/inbound-sms';

let system: TestSystem;
let partner: PartnerClient;
let account: { id: string; phone_number: string };

beforeAll(async () => {
  system = await startSystem();
  partner = partnerClient(system.app, await system.createPartner('Senders CRM'));
  account = (await partner.post('/accounts', { name: 'Sunrise Mortgage' })).body;
});
afterAll(async () => system?.close());

const inboundSms = (from: string, body: string) =>
  postInboundSms(system, { to: account.phone_number, from, body });

describe('inbound SMS from senders that are not phone numbers', () => {
  it('answers Twilio and stores nothing for a short code or an alphanumeric sender, even a STOP', async () => {
    const before = await logSize(system.services);
    for (const [from, body] of [
      ['72345', 'Your verification code is 123456'],
      ['ACMEBANK', 'Your card was charged $12.00'],
      ['262966', 'STOP'],
    ] as const) {
      const answer = await inboundSms(from, body);
      expect(answer.statusCode).toBe(200);
      expect(answer.headers['content-type']).toContain('text/xml');
    }
    expect(await logSize(system.services)).toBe(before);
    expect((await partner.get(`/accounts/${account.id}/leads`)).body.total).toBe(0);
  });

  it('still makes a lead of a phone number', async () => {
    expect((await inboundSms('+15125550177', 'Hi, is this still available?')).statusCode).toBe(200);
    const lead = await partner.get(`/accounts/${account.id}/leads/${encodeURIComponent('+15125550177')}`);
    expect(lead.status).toBe(200);
  });
});

describe('inbound SMS longer than Twilio sends', () => {
  it('refuses a form over 64 KB with a 413 problem and keeps nothing', async () => {
    const before = await logSize(system.services);
    const answer = await inboundSms('+15125550178', 'x'.repeat(1024 * 1024));
    expect(answer.statusCode).toBe(413);
    expect(answer.headers['content-type']).toContain('application/problem+json');
    expect(answer.json()).toMatchObject({ status: 413, code: 'payload_too_large' });
    expect(await logSize(system.services)).toBe(before);
  });

  it('keeps the first 1,600 characters of a longer body, as Twilio would have sent it', async () => {
    const phone = '+15125550179';
    // Emoji at the cut: characters are counted as a phone counts them, none is split in half.
    const body = `${'a'.repeat(1599)}${'🏠'.repeat(3_000)}`;
    expect((await inboundSms(phone, body)).statusCode).toBe(200);
    const { messages } = (
      await partner.get(`/accounts/${account.id}/conversations/${encodeURIComponent(phone)}/messages`)
    ).body as { messages: { body: string }[] };
    expect(messages.map((message) => message.body)).toEqual([`${'a'.repeat(1599)}🏠`]);
  });
});
