import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logSize } from '@leadline/test-kit';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

/** Text that compresses about as well as real text does (not a run of one letter), deterministic. */
function textOf(length: number, seed: number): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789,.';
  let state = seed * 2654435761 + 1;
  let text = '';
  while (text.length < length) {
    state = (state * 1103515245 + 12345) % 2147483648;
    text += alphabet[state % alphabet.length];
  }
  // The API trims text fields: the ends must not be spaces.
  return `x${text.slice(1, length - 1)}x`;
}

/** 50 keys of 64 characters whose JSON is exactly 16 KB, the most metadata a lead may carry. */
function fullMetadata(seed: number): Record<string, string> {
  const keys = Array.from({ length: 50 }, (_, i) => `${String(i).padStart(2, '0')}${textOf(62, seed + i)}`);
  const empty = JSON.stringify(Object.fromEntries(keys.map((key) => [key, '']))).length;
  const room = 16 * 1024 - empty;
  return Object.fromEntries(
    keys.map((key, i) => {
      const share = Math.floor(room / 50) + (i < room % 50 ? 1 : 0);
      return [key, textOf(share, seed * 7 + i).replace(/[^a-zA-Z0-9]/g, 'q')];
    }),
  );
}

/** A lead with every field at its longest: names, email (320), notes (5,000), metadata (16 KB)… */
function longestLead(index: number) {
  const id = String(index).padStart(4, '0');
  const label = (length: number) => 'a'.repeat(length);
  return {
    phone: `+1512557${id}`,
    name: textOf(200, index * 10 + 1),
    first_name: textOf(100, index * 10 + 2),
    last_name: textOf(100, index * 10 + 3),
    // 64 + 1 + 255: the longest address there is.
    email: `${id}${textOf(60, index)
      .replace(/[^a-z0-9]/gi, 'z')
      .toLowerCase()}@${label(63)}.${label(63)}.${label(63)}.${label(59)}.com`,
    company: textOf(200, index * 10 + 4),
    notes: textOf(5000, index * 10 + 5),
    source: textOf(100, index * 10 + 6),
    external_id: `${id}${textOf(196, index * 10 + 7)}`,
    property_address: textOf(500, index * 10 + 8),
    metadata: fullMetadata(index),
  };
}

async function newAccount(client: PartnerClient) {
  const { body } = await client.post('/accounts', { name: 'Bulk Co' });
  return body.id as string;
}

describe('a bulk import of the largest leads the API accepts', () => {
  let system: TestSystem;
  let partner: PartnerClient;
  beforeAll(async () => {
    system = await startSystem({ projectionWaitMs: 60_000 });
    partner = partnerClient(system.app, await system.createPartner('Bulk CRM'));
  });
  afterAll(() => system?.close());

  it('creates 1,000 leads with every field at its maximum length, and each one reads back whole', async () => {
    const account = await newAccount(partner);
    const leads = Array.from({ length: 1000 }, (_, i) => longestLead(i));
    expect(JSON.stringify(leads[0]!.metadata).length).toBe(16 * 1024);
    expect(leads[0]!.email.length).toBe(320);
    // Far over Kafka's default 1 MB batch, under the bulk import's 24 MB body limit.
    expect(JSON.stringify({ leads }).length).toBeGreaterThan(20 * 1024 * 1024);

    const response = await partner.post(`/accounts/${account}/leads/bulk`, { leads });
    expect(response.body).toMatchObject({ imported: 1000, updated: 0, skipped: 0, errors: [] });
    expect(response.status).toBe(200);

    const listed: { phone: string; email: string }[] = [];
    for (let offset = 0; offset < 1000; offset += 250) {
      const { body } = await partner.get(`/accounts/${account}/leads?limit=250&offset=${offset}`);
      expect(body.total).toBe(1000);
      listed.push(...body.leads);
    }
    expect(new Set(listed.map((lead) => lead.phone)).size).toBe(1000);
    for (const index of [0, 499, 999]) {
      const lead = leads[index]!;
      const { status, body } = await partner.get(
        `/accounts/${account}/leads/${encodeURIComponent(lead.phone)}`,
      );
      expect(status).toBe(200);
      expect(body).toMatchObject(lead);
    }
  });
});

describe('a request whose events are over what one request may append', () => {
  let system: TestSystem;
  let partner: PartnerClient;
  beforeAll(async () => {
    system = await startSystem({ appendMaxBytes: 256 * 1024 });
    partner = partnerClient(system.app, await system.createPartner('Small CRM'));
  });
  afterAll(() => system?.close());

  it('is a 413 event_batch_too_large that writes nothing', async () => {
    const account = await newAccount(partner);
    const before = await logSize(system.services);
    const leads = Array.from({ length: 100 }, (_, i) => longestLead(i));

    const refused = await partner.post(`/accounts/${account}/leads/bulk`, { leads });
    expect(refused.status).toBe(413);
    expect(refused.body.code).toBe('event_batch_too_large');
    expect(await logSize(system.services)).toBe(before);
    expect((await partner.get(`/accounts/${account}/leads?limit=1`)).body.total).toBe(0);

    // The same leads in requests under the limit are imported.
    const fewer = await partner.post(`/accounts/${account}/leads/bulk`, { leads: leads.slice(0, 5) });
    expect(fewer.body).toMatchObject({ imported: 5, errors: [] });
  });
});
