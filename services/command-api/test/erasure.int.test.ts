import { createSecretBox, DEVELOPMENT_WEBHOOK_KEY, newUuid, systemClock } from '@leadline/runtime';
import { accountEvents, eventually, rawLogText } from '@leadline/test-kit';
import {
  createDispatcher,
  createWebhookClient,
  DEFAULT_RETRY_DELAYS_SECONDS,
  startRelay,
  toWebhookEvent,
} from '@leadline/webhook-relay';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { readModelSnapshot } from '../../../system-test/log';
import { startReceiver } from '@leadline/test-kit';
import { startSystem, type TestSystem } from '../../../system-test/system';

let system: TestSystem;
let acme: PartnerClient;
let acmeKey: string;

beforeAll(async () => {
  system = await startSystem();
  acmeKey = await system.createPartner('Acme CRM');
  acme = partnerClient(system.app, acmeKey);
});
afterAll(async () => {
  await system?.close();
});

// The person to erase: every value is unusual enough that finding it anywhere means it was kept.
const phone = '+15125557319';
const person = {
  name: 'Zephyrine Quarterbridge',
  email: 'zephyrine.q@example.org',
  notes: 'Prefers calls after six, divorce settlement pending',
  metadata: { loan_reference: 'LOAN-ZQ-77310' },
};
const manualBody = 'Your refinance quote is ready, Zephyrine';
const inboundBody = 'I will send my W-2 from the Quarterbridge estate tomorrow';
/** What must be nowhere once the person is erased; the phone in every form a table could keep. */
const personalValues = [
  phone,
  phone.slice(2),
  person.name,
  person.email,
  person.notes,
  person.metadata.loan_reference,
  manualBody,
  inboundBody,
];

/** Another lead of the account, which the erasure must leave as it is. */
const otherPhone = '+15125557320';

async function inboundSms(to: string, from: string, body: string) {
  const response = await system.app.inject({
    method: 'POST',
    url: '/twilio/sms',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      MessageSid: `SM${newUuid().replaceAll('-', '')}`,
      From: from,
      To: to,
      Body: body,
      NumMedia: '0',
    }).toString(),
  });
  expect(response.statusCode).toBe(200);
}

/** Every row of every table of every schema of the test database, as JSON text (the registry keeps its own). */
async function everyRow(): Promise<{ table: string; row: string }[]> {
  const { rows: tables } = await sql<{ table_schema: string; table_name: string }>`
    select table_schema, table_name from information_schema.tables
    where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')
  `.execute(system.services.db);
  const found: { table: string; row: string }[] = [];
  for (const { table_schema, table_name } of tables) {
    const { rows } = await sql<{ row: string }>`
      select row_to_json(t)::text as row from ${sql.table(`${table_schema}.${table_name}`)} t
    `.execute(system.services.db);
    for (const { row } of rows) found.push({ table: `${table_schema}.${table_name}`, row });
  }
  return found;
}

/**
 * The rows holding any of the person's values, named by table and value: as text, or as the hex that
 * `row_to_json` writes a `bytea` column as (stored answers, document bytes).
 */
async function rowsWithPersonalValues(values: readonly string[] = personalValues) {
  const rows = await everyRow();
  return rows.flatMap(({ table, row }) =>
    values
      .filter((value) => row.includes(value) || row.includes(Buffer.from(value, 'utf8').toString('hex')))
      .map((value) => `${table}: ${value}`),
  );
}

const usageOf = (accountId: string) =>
  system.services.db.selectFrom('usage_counters').selectAll().where('account_id', '=', accountId).execute();

describe('erasing a person (a privacy request)', () => {
  it('forgets the lead everywhere: API, log, every table, and a rebuild; usage keeps its counts', async () => {
    const account = await acme.post('/accounts', { name: 'Sunrise Mortgage', consent_required: false });
    expect(account.status).toBe(201);
    const accountId = account.body.id as string;
    const accountNumber = account.body.phone_number as string;

    // The import carries an Idempotency-Key: its stored answer echoes the lead, phone and name.
    const imported = await system.app.inject({
      method: 'POST',
      url: `/v1/accounts/${accountId}/leads`,
      headers: { 'x-partner-key': acmeKey, 'idempotency-key': `import-${newUuid()}` },
      payload: { phone, ...person },
    });
    expect(imported.statusCode).toBe(201);
    expect(
      (await acme.post(`/accounts/${accountId}/leads`, { phone: otherPhone, name: 'Kept' })).status,
    ).toBe(201);
    const sent = await acme.post(
      `/accounts/${accountId}/conversations/${encodeURIComponent(phone)}/messages`,
      {
        body: manualBody,
      },
    );
    expect(sent.status).toBe(200);
    await inboundSms(accountNumber, phone, inboundBody);
    const messages = await acme.get(
      `/accounts/${accountId}/conversations/${encodeURIComponent(phone)}/messages`,
    );
    expect(messages.body.messages.map((message: { body: string }) => message.body).sort()).toEqual(
      [inboundBody, manualBody].sort(),
    );
    // Before: the person's values are in the read models (the scan below is not vacuous).
    expect(await rowsWithPersonalValues()).toEqual(
      expect.arrayContaining([`read_model.leads: ${person.name}`, `public.idempotency_keys: ${person.name}`]),
    );
    const usageBefore = await usageOf(accountId);
    expect(usageBefore.length).toBeGreaterThan(0);

    const { id: leadId } = await system.services.db
      .selectFrom('leads')
      .select('id')
      .where('account_id', '=', accountId)
      .where('phone', '=', phone)
      .executeTakeFirstOrThrow();
    const erased = await acme.post(`/accounts/${accountId}/leads/${encodeURIComponent(phone)}/erase`);
    expect(erased.status).toBe(200);
    expect(erased.body).toEqual({
      success: true,
      lead_id: leadId,
      erased: true,
      erased_at: expect.any(String),
    });

    // The API knows nothing of the number any more.
    expect((await acme.get(`/accounts/${accountId}/leads/${encodeURIComponent(phone)}`)).status).toBe(404);
    expect(
      (await acme.get(`/accounts/${accountId}/conversations/${encodeURIComponent(phone)}/messages`)).status,
    ).toBe(404);
    const conversations = (await acme.get(`/accounts/${accountId}/conversations`)).body.conversations;
    expect(conversations.map((conversation: { phone: string }) => conversation.phone)).not.toContain(phone);
    // The other lead is untouched.
    expect((await acme.get(`/accounts/${accountId}/leads/${encodeURIComponent(otherPhone)}`)).status).toBe(
      200,
    );

    // Asking again is answered as done, with the erasure's time; a number never known is a 404.
    const again = await acme.post(`/accounts/${accountId}/leads/${encodeURIComponent(phone)}/erase`);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ erased: true, lead_id: null });
    expect(again.body.erased_at).toBe(erased.body.erased_at);
    expect((await acme.post(`/accounts/${accountId}/leads/%2B15125557399/erase`)).status).toBe(404);

    // The log: every event of the account decoded finds none of the values; the person's read as erased.
    const events = (await accountEvents(system.services)).filter((event) => event.account_id === accountId);
    const onLog = events.flatMap((event) =>
      personalValues
        .filter((value) => JSON.stringify(event).includes(value))
        .map((value) => `${event.type}: ${value}`),
    );
    expect(onLog).toEqual([]);
    const created = events.find((event) => event.type === 'lead.created' && event.data.lead_id === leadId);
    expect(created?.type === 'lead.created' && created.data.name).toMatch(/^erased:/);
    const erasure = events.find((event) => event.type === 'lead.erased');
    expect(erasure?.type === 'lead.erased' && erasure.data).toMatchObject({
      lead_id: leadId,
      phone: `erased:${erasure?.type === 'lead.erased' ? erasure.data.subject : ''}`,
    });

    // The partner's webhook: subscribable, and the relay makes of the event the lead id and a time only.
    const webhook = await acme.post('/webhooks', {
      url: 'https://example.com/hooks',
      events: ['lead.erased'],
      secret: 'a-secret-of-sixteen-characters',
    });
    expect(webhook.status).toBe(201);
    const payload = toWebhookEvent(erasure!, { get: () => undefined });
    expect(payload).toMatchObject({ type: 'lead.erased', data: { lead_id: leadId } });
    expect(Object.keys(payload!.data).sort()).toEqual(['erased_at', 'lead_id']);

    // Every table of every schema: none of the values, in clear or otherwise.
    expect(await rowsWithPersonalValues()).toEqual([]);
    // Billing keeps what happened.
    expect(await usageOf(accountId)).toEqual(usageBefore);

    // A rebuild from offset 0 reproduces the same read models: the lead gone, nothing left as erased.
    const leadsLeft = await system.services.db
      .selectFrom('leads')
      .select('phone')
      .where('account_id', '=', accountId)
      .execute();
    expect(leadsLeft).toEqual([{ phone: otherPhone }]);
    const before = await readModelSnapshot(system.services.db);
    await system.rebuildReadModels();
    expect(await readModelSnapshot(system.services.db)).toEqual(before);
    const { rows: leftovers } = await sql<{ row: string }>`
      select row_to_json(t)::text as row from (
        select phone from leads union all select phone from conversations union all select phone from messages
      ) t where phone like 'erased:%'`.execute(system.services.db);
    expect(leftovers).toEqual([]);
    expect(await rowsWithPersonalValues()).toEqual([]);
  });
});

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
