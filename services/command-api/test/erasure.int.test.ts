import { newUuid } from '@leadline/runtime';
import { accountEvents } from '@leadline/test-kit';
import { toWebhookEvent } from '@leadline/webhook-relay';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { readModelSnapshot } from '../../../system-test/log';
import {
  system,
  acme,
  acmeKey,
  useErasureSystem,
  phone,
  person,
  manualBody,
  inboundBody,
  personalValues,
  otherPhone,
  inboundSms,
  rowsWithPersonalValues,
  usageOf,
} from './erasure-system';

useErasureSystem();

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
