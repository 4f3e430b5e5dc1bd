import { createSecretBox, DEVELOPMENT_WEBHOOK_KEY, newUuid, systemClock } from '@leadline/runtime';
import { accountEvents, eventually, rawLogText } from '@leadline/test-kit';
import {
  createDispatcher,
  createWebhookClient,
  DEFAULT_RETRY_DELAYS_SECONDS,
  startRelay,
} from '@leadline/webhook-relay';
import { describe, expect, it } from 'vitest';
import { readModelSnapshot } from '../../../system-test/log';
import { startReceiver } from '@leadline/test-kit';
import {
  system,
  acme,
  useErasureSystem,
  inboundSms,
  rowsWithPersonalValues,
  usageOf,
} from './erasure-system';

useErasureSystem();

// The account to erase: each person's values as unusual as the lead erasure's, none shared with it.
const harbor = {
  lead: { phone: '+15125557411', name: 'Ottoline Brackenfold', email: 'ottoline.b@example.org' },
  second: { phone: '+15125557412', name: 'Cassius Wrenfeather', email: 'cassius.w@example.org' },
  // Texts the account without being imported.
  inboundOnly: { phone: '+15125557413', body: 'This is Lysander Quillmoor about the Fenwick loan' },
  // Imported, then deleted without a conversation: the log alone still holds them (known by hash).
  deleted: { phone: '+15125557414', name: 'Perpetua Ashgrove' },
  member: { email: 'thaddeus.mirelock@example.org', name: 'Thaddeus Mirelock' },
  manual: 'Your appraisal is booked, Ottoline',
  inbound: 'Sending the Brackenfold deed this evening',
};
const harborValues = [
  ...[harbor.lead, harbor.second, harbor.inboundOnly, harbor.deleted].map((person) => person.phone),
  harbor.lead.name,
  harbor.lead.email,
  harbor.second.name,
  harbor.second.email,
  harbor.inboundOnly.body,
  harbor.deleted.name,
  harbor.member.email,
  harbor.member.name,
  harbor.manual,
  harbor.inbound,
];
/** The other account of the same partner, which the erasure must not touch. */
const kept = { phone: '+15125557415', name: 'Kept Wilhelmina Strand' };

/** Every byte of this file's log, as Latin-1 text (a value in clear shows as itself). */
const rawLog = () => rawLogText(system.services, system.env.config.TOPIC_PREFIX);

describe('erasing an account (a privacy request for everyone it holds)', () => {
  it('erases every person and team member of the account, keeps the account and the other account', async () => {
    // The partner's endpoint, and a relay delivering to it as the webhook relay service does.
    const receiver = await startReceiver();
    const client = createWebhookClient({ timeoutMs: 5_000, allowPrivateTargets: true, ca: receiver.ca });
    const dispatcher = createDispatcher({
      db: system.services.db,
      clock: systemClock,
      client,
      secrets: createSecretBox(DEVELOPMENT_WEBHOOK_KEY),
      retryDelaysSeconds: DEFAULT_RETRY_DELAYS_SECONDS,
      concurrency: 2,
      commands: system.services.commands,
    });
    const relay = await startRelay({
      ...system.services,
      groupId: `${system.env.config.TOPIC_PREFIX}leadline.webhook-relay`,
      clock: systemClock,
      newId: newUuid,
      onDeliveriesQueued: () => dispatcher.wake(),
    });
    dispatcher.start();
    try {
      const webhook = await acme.post('/webhooks', {
        url: receiver.url('/erasures'),
        // lead.created too: its deliveries carry the people's values, which the relay must forget.
        events: ['lead.created', 'lead.erased', 'account.erased'],
        secret: 'a-secret-of-sixteen-characters',
      });
      expect(webhook.status).toBe(201);
      const delivered = () =>
        receiver
          .requests('/erasures')
          .map(
            (request) =>
              JSON.parse(request.body.toString('utf8')) as { type: string; account_id: string; data: never },
          );

      const created = await acme.post('/accounts', { name: 'Harborline Lending', consent_required: false });
      const accountId = created.body.id as string;
      const accountNumber = created.body.phone_number as string;
      const other = await acme.post('/accounts', { name: 'Keptwell Lending', consent_required: false });
      const otherId = other.body.id as string;
      expect((await acme.post(`/accounts/${otherId}/leads`, kept)).status).toBe(201);

      for (const person of [harbor.lead, harbor.second, harbor.deleted]) {
        expect((await acme.post(`/accounts/${accountId}/leads`, person)).status).toBe(201);
      }
      expect(
        (await acme.delete(`/accounts/${accountId}/leads/${encodeURIComponent(harbor.deleted.phone)}`))
          .status,
      ).toBe(200);
      const leadPath = (phone: string) => `/accounts/${accountId}/leads/${encodeURIComponent(phone)}`;
      expect(
        (
          await acme.post(
            `/accounts/${accountId}/conversations/${encodeURIComponent(harbor.lead.phone)}/messages`,
            { body: harbor.manual },
          )
        ).status,
      ).toBe(200);
      await inboundSms(accountNumber, harbor.lead.phone, harbor.inbound);
      await inboundSms(accountNumber, harbor.inboundOnly.phone, harbor.inboundOnly.body);
      expect((await acme.post(`/accounts/${accountId}/team/invite`, harbor.member)).status).toBe(201);
      // Before: the values are in the read models and in the relay's deliveries (the scan is not vacuous).
      await eventually(
        async () =>
          delivered().filter((event) => event.type === 'lead.created').length >= 4 ? true : undefined,
        { message: 'the lead.created webhooks never arrived' },
      );
      expect(await rowsWithPersonalValues(harborValues)).toEqual(
        expect.arrayContaining([
          `read_model.leads: ${harbor.lead.name}`,
          `read_model.team_members: ${harbor.member.email}`,
          `read_model.messages: ${harbor.inboundOnly.body}`,
          `public.webhook_deliveries: ${harbor.second.email}`,
        ]),
      );
      const usageBefore = await usageOf(accountId);

      const erased = await acme.post(`/accounts/${accountId}/erase`);
      expect(erased.status).toBe(200);
      // Four people: the two leads, the number that only texted, the deleted lead its log still held.
      expect(erased.body).toEqual({
        id: accountId,
        status: 'deactivated',
        erased_at: expect.any(String),
        leads_erased: 4,
      });

      // The API: the account answers, deactivated and empty; none of its people; the other account as it was.
      const account = await acme.get(`/accounts/${accountId}`);
      expect(account.status).toBe(200);
      expect(account.body).toMatchObject({
        status: 'deactivated',
        stats: { total_leads: 0, total_conversations: 0 },
      });
      for (const phone of [harbor.lead.phone, harbor.second.phone, harbor.inboundOnly.phone]) {
        expect((await acme.get(leadPath(phone))).status).toBe(404);
      }
      expect((await acme.get(`/accounts/${accountId}/leads`)).body.leads).toEqual([]);
      expect((await acme.get(`/accounts/${accountId}/conversations`)).body.conversations).toEqual([]);
      expect((await acme.get(`/accounts/${accountId}/team`)).body.team_members).toEqual([]);
      const keptLead = await acme.get(`/accounts/${otherId}/leads/${encodeURIComponent(kept.phone)}`);
      expect(keptLead.body).toMatchObject({ phone: kept.phone, name: kept.name });
      // Every key of the account is destroyed; the other account's are live.
      const liveKeys = await system.services.db
        .selectFrom('personal_data_keys')
        .select(['account_id'])
        .where('erased_at', 'is', null)
        .where('account_id', 'in', [accountId, otherId])
        .execute();
      expect(liveKeys.map((key) => key.account_id)).toEqual([otherId]);
      expect(await usageOf(accountId)).toEqual(usageBefore);

      // The partner is told: a lead.erased per person, then account.erased with the count and the time.
      const erasures = await eventually(
        async () => {
          const events = delivered().filter((event) => event.account_id === accountId);
          return events.some((event) => event.type === 'account.erased') ? events : undefined;
        },
        { message: 'the account.erased webhook never arrived' },
      );
      expect(erasures.filter((event) => event.type === 'lead.erased')).toHaveLength(4);
      expect(erasures.find((event) => event.type === 'account.erased')?.data).toEqual({
        erased_at: erased.body.erased_at,
        leads_erased: 4,
      });

      // The log, raw and decoded: none of the values in clear; the deleted lead's read as erased.
      const raw = await rawLog();
      expect(harborValues.filter((value) => raw.includes(value))).toEqual([]);
      const events = (await accountEvents(system.services)).filter((event) => event.account_id === accountId);
      // Four leads were created (the number that texted became one): each reads as erased.
      const leads = events.flatMap((event) => (event.type === 'lead.created' ? [event.data] : []));
      expect(leads).toHaveLength(4);
      for (const lead of leads) expect(lead.phone).toMatch(/^erased:/);

      // Every table of every schema (the relay's deliveries included, now it is past the erasure).
      expect(await rowsWithPersonalValues(harborValues)).toEqual([]);

      // Asking again answers the same.
      const again = await acme.post(`/accounts/${accountId}/erase`);
      expect(again.status).toBe(200);
      expect(again.body).toEqual(erased.body);

      // An erased account takes no more leads (erased-account.int.test.ts has the rest of its rules).
      const late = { phone: '+15125557416', name: 'Leocadia Farrowmere' };
      const refused = await acme.post(`/accounts/${accountId}/leads`, late);
      expect(refused.body).toMatchObject({ status: 409, code: 'account_erased' });
      expect((await acme.get(leadPath(late.phone))).status).toBe(404);

      // A rebuild from offset 0 reproduces the read models, none of the values back.
      const before = await readModelSnapshot(system.services.db);
      await system.rebuildReadModels();
      expect(await readModelSnapshot(system.services.db)).toEqual(before);
      expect(await rowsWithPersonalValues([...harborValues, late.name, late.phone])).toEqual([]);
    } finally {
      await relay.stop();
      await dispatcher.stop();
      client.close();
      await receiver.close();
    }
  });

  it('erases an account of 1,200 leads, more than one command erases', async () => {
    const created = await acme.post('/accounts', { name: 'Bulkhead Loans', consent_required: false });
    const accountId = created.body.id as string;
    const phones = Array.from({ length: 1_200 }, (_, index) => `+1512666${String(index).padStart(4, '0')}`);
    for (let at = 0; at < phones.length; at += 1_000) {
      const leads = phones.slice(at, at + 1_000).map((phone) => ({ phone, name: `Bulkhead ${phone}` }));
      const bulk = await acme.post(`/accounts/${accountId}/leads/bulk`, { leads });
      expect(bulk.status).toBe(200);
      expect(bulk.body.errors).toEqual([]);
    }
    expect((await acme.get(`/accounts/${accountId}`)).body.stats.total_leads).toBe(1_200);

    const erased = await acme.post(`/accounts/${accountId}/erase`);
    expect(erased.status).toBe(200);
    expect(erased.body).toMatchObject({ status: 'deactivated', leads_erased: 1_200 });
    expect((await acme.get(`/accounts/${accountId}`)).body.stats.total_leads).toBe(0);
    expect((await acme.get(`/accounts/${accountId}/leads`)).body.leads).toEqual([]);
    const events = (await accountEvents(system.services)).filter((event) => event.account_id === accountId);
    expect(events.filter((event) => event.type === 'lead.erased')).toHaveLength(1_200);
    expect(events.filter((event) => event.type === 'account.erased')).toHaveLength(1);
    const live = await system.services.db
      .selectFrom('personal_data_keys')
      .select('key_id')
      .where('account_id', '=', accountId)
      .where('erased_at', 'is', null)
      .execute();
    expect(live).toEqual([]);
    const left = await system.services.db
      .selectFrom('leads')
      .select('phone')
      .where('account_id', '=', accountId)
      .union(
        system.services.db.selectFrom('conversations').select('phone').where('account_id', '=', accountId),
      )
      .execute();
    expect(left).toEqual([]);
  });

  it('takes turns with imports into the account: each lead imported meanwhile is erased, and none after', async () => {
    const created = await acme.post('/accounts', { name: 'Turnstile Homes', consent_required: false });
    const accountId = created.body.id as string;
    const phoneOf = (index: number) => `+1512777${String(index).padStart(4, '0')}`;
    const leads = Array.from({ length: 200 }, (_, index) => ({
      phone: phoneOf(index),
      name: `Turnstile ${index}`,
    }));
    expect((await acme.post(`/accounts/${accountId}/leads/bulk`, { leads })).status).toBe(200);

    // Imports one after another for as long as the erasure runs: each is decided before it, between its
    // commands (taken), or after it (refused: the account is erased).
    let answered = false;
    const erasing = acme.post(`/accounts/${accountId}/erase`).finally(() => (answered = true));
    const taken: { phone: string; name: string }[] = [];
    let refused = 0;
    while (!answered) {
      const lead = { phone: phoneOf(500 + taken.length + refused), name: `Late ${taken.length + refused}` };
      const answer = await acme.post(`/accounts/${accountId}/leads`, lead);
      if (answer.status === 201) {
        expect(refused, 'a lead taken after one was refused').toBe(0);
        taken.push(lead);
      } else {
        expect(answer.body).toMatchObject({ status: 409, code: 'account_erased' });
        refused++;
      }
    }
    const erased = await erasing;
    expect(erased.status).toBe(200);

    // Every lead taken meanwhile was erased with the rest, and no key of a person is left live.
    expect(erased.body.leads_erased).toBe(leads.length + taken.length);
    expect((await acme.get(`/accounts/${accountId}/leads`)).body.leads).toEqual([]);
    const live = await system.services.db
      .selectFrom('personal_data_keys')
      .select('subject')
      .where('account_id', '=', accountId)
      .where('erased_at', 'is', null)
      .execute();
    expect(live).toEqual([]);
  });
});
