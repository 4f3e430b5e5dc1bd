import { createDb, migrate, reserveExistingSlugs } from '@leadline/runtime';
import { createTestEnvironment, logSize, startFakeTwilio, type FakeTwilio } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

let system: TestSystem;
let twilio: FakeTwilio;
let acme: PartnerClient;
let other: PartnerClient;

beforeAll(async () => {
  twilio = await startFakeTwilio();
  system = await startSystem({ twilio });
  acme = partnerClient(system.app, await system.createPartner('Acme CRM'));
  other = partnerClient(system.app, await system.createPartner('Other CRM'));
});
afterAll(async () => {
  await system?.close();
  await twilio?.close();
});

/** The number Twilio will offer on the next search (the fake offers its numbers in order). */
async function nextOfferedNumber(): Promise<string> {
  const auth = Buffer.from(`${twilio.accountSid}:${twilio.authToken}`).toString('base64');
  const answer = await fetch(
    `${twilio.baseUrl}/2010-04-01/Accounts/${twilio.accountSid}/AvailablePhoneNumbers/US/Local.json`,
    { headers: { authorization: `Basic ${auth}` } },
  );
  const offered = ((await answer.json()) as { available_phone_numbers: { phone_number: string }[] })
    .available_phone_numbers[0]!.phone_number;
  return `+1512555${String(Number(offered.slice(-4)) + 1).padStart(4, '0')}`;
}

describe('creating accounts without a platform-wide lock', () => {
  it('gives concurrent creations of one name distinct slugs per partner, each with its own number', async () => {
    const before = await logSize(system.services);
    const answers = await Promise.all([
      ...Array.from({ length: 12 }, () => acme.post('/accounts', { name: 'Harbor Realty' })),
      ...Array.from({ length: 2 }, () => other.post('/accounts', { name: 'Harbor Realty' })),
    ]);
    expect(answers.map((answer) => answer.status)).toEqual(Array(14).fill(201));
    const slugs = (from: typeof answers) => from.map((answer) => answer.body.slug as string).sort();
    expect(slugs(answers.slice(0, 12))).toEqual(
      ['harbor-realty', ...Array.from({ length: 11 }, (_, i) => `harbor-realty-${i + 2}`)].sort(),
    );
    expect(slugs(answers.slice(12))).toEqual(['harbor-realty', 'harbor-realty-2']);
    expect(new Set(answers.map((answer) => answer.body.phone_number)).size).toBe(14);
    expect(await logSize(system.services)).toBe(before + 14);

    // What the partner lists afterwards agrees with what each creation answered.
    const listed = await acme.get('/accounts?search=Harbor&limit=100');
    expect((listed.body.accounts as { id: string }[]).map((account) => account.id).sort()).toEqual(
      answers
        .slice(0, 12)
        .map((answer) => answer.body.id as string)
        .sort(),
    );
  });

  it('releases the number it bought when the creation then fails, and a retry gets another', async () => {
    // Twilio offers a number that a deactivated account of ours still holds (released in Twilio's
    // console and sold back to us, say): the reservation refuses it after the purchase.
    const held = await nextOfferedNumber();
    await system.services.db
      .insertInto('phone_number_reservations')
      .values({ phone_number: held, account_id: 'deactivated-elsewhere', partner_id: 'another-partner' })
      .execute();
    const before = await logSize(system.services);

    const refused = await acme.post('/accounts', { name: 'Unlucky Homes' });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('phone_number_in_use');
    expect(twilio.releasedNumbers.map((number) => number.phoneNumber)).toContain(held);
    expect(twilio.numbers.map((number) => number.phoneNumber)).not.toContain(held);
    expect(await logSize(system.services)).toBe(before);

    // The failed creation kept neither its slug nor anything else: the retry gets both.
    const retried = await acme.post('/accounts', { name: 'Unlucky Homes' });
    expect(retried.status).toBe(201);
    expect(retried.body.slug).toBe('unlucky-homes');
    expect(retried.body.phone_number).not.toBe(held);
    expect(twilio.numbers.map((number) => number.phoneNumber)).toContain(retried.body.phone_number);
  });

  it('reserves the slugs of existing accounts when the reservation table is introduced', async () => {
    const env = await createTestEnvironment();
    const db = createDb(env.config.DATABASE_URL, { maxConnections: 1 });
    try {
      await migrate(env.config.DATABASE_URL);
      const account = (id: string, partner: string, slug: string) => ({
        id,
        partner_id: partner,
        name: id,
        company_name: id,
        slug,
        status: 'active' as const,
        phone_number: `+1512555${id.slice(-4)}`,
        metadata: '{}',
        created_at: '2026-01-01T00:00:00Z',
        updated_at: '2026-01-01T00:00:00Z',
      });
      await db
        .insertInto('accounts')
        .values([
          account('acc-0001', 'partner-1', 'acme'),
          account('acc-0002', 'partner-1', 'acme-2'),
          account('acc-0003', 'partner-2', 'acme'),
        ])
        .execute();
      // What the migration that introduced slug reservations runs once the table exists.
      await reserveExistingSlugs(db);
      await reserveExistingSlugs(db);
      const reservations = await db
        .selectFrom('account_slug_reservations')
        .select(['partner_id', 'slug', 'account_id'])
        .orderBy('account_id')
        .execute();
      expect(reservations).toEqual([
        { partner_id: 'partner-1', slug: 'acme', account_id: 'acc-0001' },
        { partner_id: 'partner-1', slug: 'acme-2', account_id: 'acc-0002' },
        { partner_id: 'partner-2', slug: 'acme', account_id: 'acc-0003' },
      ]);
    } finally {
      await db.destroy();
      await env.dispose();
    }
  });
});
