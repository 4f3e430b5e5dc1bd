import {
  createCommandBus,
  createDb,
  createPool,
  createProjectionProgress,
  createSecretBox,
  DEVELOPMENT_WEBHOOK_KEY,
  migrate,
  reserveExistingPhoneNumbers,
  newUuid,
  systemClock,
} from '@leadline/runtime';
import {
  createTestEnvironment,
  logSize,
  startFakeTwilio,
  testDocuments,
  type FakeTwilio,
} from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLocalNumberPool, createTwilioProvider } from '@leadline/telephony';
import { releaseOrphanNumbers } from '../src/accounts/orphan-numbers';
import { reservePhoneNumber } from '../src/accounts/phone-numbers';
import { buildApp } from '../src/app';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { refusingKafka } from '../../../system-test/log';
import { startSystem, type TestSystem } from '../../../system-test/system';
import { postInboundSms } from '../../../system-test/inbound-sms';

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

let numbers = 0;
/** A number our Twilio account holds (bought in the console, say) that no account has yet. */
const ourNumber = () => twilio.addNumber(`+1737555${String(++numbers).padStart(4, '0')}`).phoneNumber;

const inboundSms = (to: string, from: string, body: string) =>
  postInboundSms(system, { to, from, body }, twilio);

describe('one number, one account', () => {
  it('gives a number contended by 20 concurrent creations across two partners to exactly one, and tells the others nothing about it', async () => {
    const number = ourNumber();
    const before = await logSize(system.services);
    const attempts = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 === 0 ? acme : other).post('/accounts', { name: `Contender ${i}`, phone_number: number }),
      ),
    );
    const created = attempts.filter((attempt) => attempt.status === 201);
    const refused = attempts.filter((attempt) => attempt.status === 409);
    expect(created).toHaveLength(1);
    expect(refused).toHaveLength(19);
    const winner = created[0]!.body;
    for (const { body } of refused) {
      expect(body).toMatchObject({
        code: 'phone_number_in_use',
        detail: 'This phone number is not available.',
      });
      const text = JSON.stringify(body);
      for (const revealing of [winner.id, winner.name, winner.slug, 'Acme', 'Other']) {
        expect(text).not.toContain(revealing);
      }
    }
    // The same answer to both partners, whichever of them holds the number.
    expect(new Set(refused.map(({ body }) => JSON.stringify({ ...body, instance: undefined }))).size).toBe(1);
    expect(await logSize(system.services)).toBe(before + 1);
  });

  it('holds without any other lock: of concurrent transactions reserving one number, exactly one gets it', async () => {
    const db = createDb(system.env.config.DATABASE_URL, { maxConnections: 10 });
    try {
      const number = '+15125550888';
      const outcomes = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          db.transaction().execute((trx) =>
            reservePhoneNumber(trx, {
              phone_number: number,
              account_id: `racer-${i}`,
              partner_id: `p-${i % 2}`,
            }),
          ),
        ),
      );
      expect(outcomes.filter(Boolean)).toHaveLength(1);
    } finally {
      await db.destroy();
    }
  });

  it('refuses a supplied number that is not one of our Twilio numbers with a 422, writing nothing', async () => {
    const before = await logSize(system.services);
    const refused = await acme.post('/accounts', { name: 'Borrowed', phone_number: '+15125550999' });
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({ code: 'phone_number_not_owned', phone_number: '+15125550999' });
    expect(await logSize(system.services)).toBe(before);
  });

  it('does not let a supplied number take one bought for another account', async () => {
    const bought = (await acme.post('/accounts', { name: 'Bought' })).body.phone_number;
    const taken = await other.post('/accounts', { name: 'Taker', phone_number: bought });
    expect(taken.status).toBe(409);
    expect(taken.body.code).toBe('phone_number_in_use');
  });

  it('keeps the number of a deactivated account until the partner releases it; then the number moves on', async () => {
    const number = ourNumber();
    const old = (await acme.post('/accounts', { name: 'Closing', phone_number: number })).body;
    expect((await acme.delete(`/accounts/${old.id}`)).status).toBe(200);
    expect((await other.post('/accounts', { name: 'Early', phone_number: number })).status).toBe(409);

    // Only the owner can release it, and only once the account is deactivated.
    expect((await other.post(`/accounts/${old.id}/phone-number/release`)).status).toBe(404);
    const active = (await acme.post('/accounts', { name: 'Busy', phone_number: ourNumber() })).body;
    const stillActive = await acme.post(`/accounts/${active.id}/phone-number/release`);
    expect(stillActive.status).toBe(409);
    expect(stillActive.body.code).toBe('account_active');

    const released = await acme.post(`/accounts/${old.id}/phone-number/release`);
    expect(released.status).toBe(200);
    expect(released.body).toMatchObject({ id: old.id, phone_number: number });
    const again = await acme.post(`/accounts/${old.id}/phone-number/release`);
    expect(again.body).toEqual(released.body);
    const reactivate = await acme.patch(`/accounts/${old.id}`, { status: 'active' });
    expect(reactivate.status).toBe(409);
    expect(reactivate.body.code).toBe('phone_number_released');

    const next = await other.post('/accounts', { name: 'Next', phone_number: number });
    expect(next.status).toBe(201);
    // Inbound SMS to the number now reaches the new account only.
    expect((await inboundSms(number, '+15125550777', 'Hello?')).statusCode).toBe(200);
    expect((await other.get(`/accounts/${next.body.id}/conversations`)).body.conversations).toHaveLength(1);
    expect((await acme.get(`/accounts/${old.id}/conversations`)).body.conversations).toHaveLength(0);
  });

  it('gives the number back when the event log refuses the account', async () => {
    const number = ourNumber();
    const listener = createPool(system.env.config.DATABASE_URL, { maxConnections: 2 });
    const progress = await createProjectionProgress(listener);
    const db = createDb(system.env.config.DATABASE_URL, { maxConnections: 2 });
    const commands = createCommandBus({
      ...system.services,
      db,
      kafka: refusingKafka(),
      progress,
      clock: systemClock,
      newId: newUuid,
      projectionWaitMs: 5000,
    });
    const app = await buildApp({
      db: system.services.db,
      commands,
      numbers: {
        provisionNumber: async () => ({ phoneNumber: number, providerId: 'PN0' }),
        isOwnNumber: async () => true,
        releaseNumber: async () => {},
      },
      clock: systemClock,
      newId: newUuid,
      publicUrl: system.publicUrl,
      rateLimitPerMinute: 1000,
      webhookSecrets: createSecretBox(DEVELOPMENT_WEBHOOK_KEY),
      ...testDocuments(system.services.db),
      personalDataKeys: system.services.personalDataKeys,
    });
    try {
      const key = await system.createPartner('Unlucky CRM');
      const failed = await partnerClient(app, key).post('/accounts', { name: 'Lost', phone_number: number });
      expect(failed.status).toBe(503);
      const retried = await partnerClient(system.app, key).post('/accounts', {
        name: 'Found',
        phone_number: number,
      });
      expect(retried.status).toBe(201);
    } finally {
      await app.close();
      await commands.close();
      await progress.close();
      await listener.end();
      await db.destroy();
    }
  });

  it('reports numbers that existing accounts already share when the reservation table is introduced', async () => {
    // A database of its own where two accounts hold one number and none is reserved, as before reservations.
    const env = await createTestEnvironment();
    const db = createDb(env.config.DATABASE_URL, { maxConnections: 1 });
    try {
      await migrate(env.config.DATABASE_URL);
      const account = (id: string, phone: string, createdAt: string) => ({
        id,
        partner_id: id === 'acc-b' ? 'partner-2' : 'partner-1',
        name: id,
        company_name: id,
        slug: id,
        status: 'active' as const,
        phone_number: phone,
        metadata: '{}',
        created_at: createdAt,
        updated_at: createdAt,
      });
      await db
        .insertInto('accounts')
        .values([
          account('acc-b', '+15125550100', '2026-01-02T00:00:00Z'),
          account('acc-a', '+15125550100', '2026-01-01T00:00:00Z'),
          account('acc-c', '+15125550101', '2026-01-03T00:00:00Z'),
        ])
        .execute();
      const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
      try {
        // What the migration that introduced reservations runs once the table exists.
        await reserveExistingPhoneNumbers(db);
        expect(warn.mock.calls.map((call) => String(call[0]))).toEqual([
          expect.stringContaining('+15125550100 is shared by accounts acc-a, acc-b'),
        ]);
      } finally {
        warn.mockRestore();
      }
      const reservations = await db
        .selectFrom('phone_number_reservations')
        .select(['phone_number', 'account_id'])
        .orderBy('phone_number')
        .execute();
      expect(reservations).toEqual([
        { phone_number: '+15125550100', account_id: 'acc-a' },
        { phone_number: '+15125550101', account_id: 'acc-c' },
      ]);
    } finally {
      await db.destroy();
      await env.dispose();
    }
  });

  it('gives back, an hour after purchase, a number bought for an account that was never created, and only that', async () => {
    // The provider as the command API uses it, on the same Twilio account.
    const provider = createTwilioProvider({
      accountSid: twilio.accountSid,
      authToken: twilio.authToken,
      apiBaseUrl: twilio.baseUrl,
      publicUrl: system.publicUrl,
    });
    const fakeNumberOf = (phoneNumber: string) => twilio.numbers.find((n) => n.phoneNumber === phoneNumber)!;
    const hoursAgo = (phoneNumber: string, hours: number) =>
      (fakeNumberOf(phoneNumber).dateCreated = new Date(Date.now() - hours * 3600_000));

    // Bought for accounts whose creation never completed (the process died after the purchase).
    const orphan = await provider.provisionNumber(newUuid());
    hoursAgo(orphan.phoneNumber, 2);
    const justBought = await provider.provisionNumber(newUuid());
    // An orphan a partner has since supplied to an account of its own.
    const adopted = await provider.provisionNumber(newUuid());
    hoursAgo(adopted.phoneNumber, 2);
    expect(
      (await acme.post('/accounts', { name: 'Adopter', phone_number: adopted.phoneNumber })).status,
    ).toBe(201);
    // Bought for an account that exists and later released it: still ours, for another account.
    const closed = (await acme.post('/accounts', { name: 'Closed' })).body;
    hoursAgo(closed.phone_number, 2);
    await acme.delete(`/accounts/${closed.id}`);
    expect((await acme.post(`/accounts/${closed.id}/phone-number/release`)).status).toBe(200);
    // An account's number, and one bought in Twilio's console.
    const live = (await acme.post('/accounts', { name: 'Live' })).body;
    hoursAgo(live.phone_number, 2);
    const boughtInConsole = ourNumber();
    hoursAgo(boughtInConsole, 2);

    const sweep = () =>
      releaseOrphanNumbers({ db: system.services.db, numbers: provider, clock: systemClock });
    const released = await sweep();
    expect(released.map((number) => number.phoneNumber)).toEqual([orphan.phoneNumber]);
    expect(twilio.releasedNumbers.map((number) => number.phoneNumber)).toContain(orphan.phoneNumber);
    const held = twilio.numbers.map((number) => number.phoneNumber);
    for (const kept of [
      justBought.phoneNumber,
      adopted.phoneNumber,
      closed.phone_number,
      live.phone_number,
      boughtInConsole,
    ])
      expect(held).toContain(kept);
    // A second sweep, or one running beside it, finds nothing more to give back.
    expect(await sweep()).toEqual([]);
  });

  it('sweeps the local number pool the same way', async () => {
    const pool = createLocalNumberPool(system.env.config.DATABASE_URL);
    try {
      const accountId = newUuid();
      const number = await pool.provisionNumber(accountId);
      expect((await pool.listProvisioned()).find((n) => n.phoneNumber === number.phoneNumber)).toMatchObject({
        accountId,
        providerId: number.providerId,
      });
      // Two hours on, nobody has created the account.
      const later = { now: () => new Date(Date.now() + 2 * 3600_000) };
      const released = await releaseOrphanNumbers({ db: system.services.db, numbers: pool, clock: later });
      expect(released.map((n) => n.phoneNumber)).toContain(number.phoneNumber);
      expect((await pool.listProvisioned()).map((n) => n.phoneNumber)).not.toContain(number.phoneNumber);
    } finally {
      await pool.close();
    }
  });
});
