import { afterAll, beforeAll, expect } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';
import { postInboundSms } from '../../../system-test/inbound-sms';

/** What the consent tests share: the system, new numbers and accounts, a web form's consent, and inbound SMS. */
export let system: TestSystem;
export let acme: PartnerClient;
export let other: PartnerClient;
export let acmeKey: string;

/** The system with two partners (Acme CRM and Other CRM), on this file's own database and topics. */
export function useConsentSystem() {
  beforeAll(async () => {
    system = await startSystem();
    acmeKey = await system.createPartner('Acme CRM');
    acme = partnerClient(system.app, acmeKey);
    other = partnerClient(system.app, await system.createPartner('Other CRM'));
  });
  afterAll(async () => {
    await system?.close();
  });
}

let phones = 0;
export const nextPhone = () => `+1512555${String(1000 + ++phones).padStart(4, '0')}`;
export const path = (phone: string) => encodeURIComponent(phone);

export async function newAccount(fields: Record<string, unknown> = {}) {
  const { status, body } = await acme.post('/accounts', { name: 'Sunrise Mortgage', ...fields });
  expect(status).toBe(201);
  return body as { id: string; phone_number: string; consent_required: boolean };
}

export const webForm = {
  method: 'web_form',
  captured_at: '2026-01-05T14:30:00Z',
  source_url: 'https://sunrise.example/apply',
  ip_address: '203.0.113.7',
  disclosure_text: 'By submitting, I agree to receive texts about my loan from Sunrise Mortgage.',
  evidence_url: 'https://evidence.example/forms/881.pdf',
};

export async function inboundSms(to: string, from: string, body: string) {
  expect((await postInboundSms(system, { to, from, body })).statusCode).toBe(200);
}
