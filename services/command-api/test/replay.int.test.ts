import type { DomainEvent } from '@leadline/events';
import { projections } from '@leadline/projector';
import { accountEvents, eventually, startFakeTwilio, type FakeTwilio } from '@leadline/test-kit';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';
import { postInboundSms } from '../../../system-test/inbound-sms';

let system: TestSystem;
let twilio: FakeTwilio;

beforeAll(async () => {
  twilio = await startFakeTwilio();
  system = await startSystem({ twilio, gateway: true });
});
afterAll(async () => {
  await system?.close();
  await twilio?.close();
});

async function inboundSms(to: string, from: string, body: string, sid: string) {
  expect((await postInboundSms(system, { to, from, body, sid }, twilio)).statusCode).toBe(200);
}

/** Every row of every read model, in a stable order. */
async function readModels() {
  const { rows: tables } = await sql<{ table_name: string }>`
    select table_name from information_schema.tables
    where table_schema = 'read_model' and table_name not in ('projection_checkpoints', 'kysely_migration', 'kysely_migration_lock')
    order by table_name`.execute(system.services.db);
  const snapshot: Record<string, unknown[]> = {};
  for (const { table_name } of tables) {
    const { rows } = await sql`select * from ${sql.table(`read_model.${table_name}`)}`.execute(
      system.services.db,
    );
    snapshot[table_name] = rows.map((row) => JSON.stringify(row)).sort();
  }
  return snapshot;
}

describe('the projections', () => {
  it('change nothing when the whole log is applied to them a second time', async () => {
    const partner = partnerClient(system.app, await system.createPartner('Replay CRM'));
    const { body: account } = await partner.post('/accounts', { name: 'Replay Homes', metadata: { a: 1 } });
    await partner.patch(`/accounts/${account.id}`, {
      metadata: { a: null, b: 2 },
      company_name: 'Replay LLC',
    });
    await partner.post(`/accounts/${account.id}/team/invite`, { email: 'ana@example.com' });
    const { body: requirement } = await partner.post(`/accounts/${account.id}/requirements`, {
      name: 'Photo ID',
      type: 'document',
    });
    await partner.patch(`/accounts/${account.id}/requirements/${requirement.id}`, { required: false });
    const { body: dropped } = await partner.post(`/accounts/${account.id}/requirements`, {
      name: 'DOB',
      type: 'date',
    });
    await partner.delete(`/accounts/${account.id}/requirements/${dropped.id}`);
    await partner.post(`/accounts/${account.id}/leads/bulk`, {
      leads: [
        { phone: '+15125550301', name: 'One' },
        { phone: '+15125550302', name: 'Two', metadata: { x: 1 } },
        { phone: '+15125550301', email: 'one@example.com' },
      ],
    });
    await partner.patch(`/accounts/${account.id}/leads/+15125550302`, {
      status: 'qualified',
      metadata: { x: null },
    });
    await partner.delete(`/accounts/${account.id}/leads/+15125550301`);
    await partner.post(`/accounts/${account.id}/leads`, { phone: '+15125550301' });
    await inboundSms(
      account.phone_number,
      '+15125550303',
      'Hi, is this the lender?',
      'SM00000000000000000000000000000301',
    );
    await inboundSms(account.phone_number, '+15125550302', 'STOP', 'SM00000000000000000000000000000302');
    const sent = await partner.post(`/accounts/${account.id}/conversations/+15125550303/messages`, {
      body: 'Yes! How can we help?',
      sender_name: 'Ana',
    });
    expect(sent.status).toBe(200);
    // Sent by the gateway through the real twilio client, and the send recorded on the log.
    await eventually(async () => {
      const row = await system.services.db
        .selectFrom('sms_outbox')
        .select('state')
        .where('message_id', '=', sent.body.message_id)
        .executeTakeFirst();
      return row?.state === 'sent' ? row : undefined;
    });
    await partner.post(`/accounts/${account.id}/conversations/+15125550303/resume-ai`);

    // Sequences: versions, default switching, enrollments sent, completed, cancelled, handed to the AI,
    // stopped by an opt-out, replied to, removed with their lead.
    const steps = [{ type: 'fixed', message: 'Hi {{first_name|there}}' }];
    const { body: once1 } = await partner.post(`/accounts/${account.id}/sequences`, { name: 'Once', steps });
    const { body: drip } = await partner.post(`/accounts/${account.id}/sequences`, {
      name: 'Drip',
      is_default: true,
      steps: [...steps, { type: 'fixed', message: 'Later', delay_hours: 24 }],
    });
    const { body: ai } = await partner.post(`/accounts/${account.id}/sequences`, {
      name: 'AI',
      steps: [{ type: 'ai', instructions: 'Ask for the pay stub.' }],
    });
    await partner.patch(`/accounts/${account.id}/sequences/${once1.id}`, { is_default: true, name: 'Once!' });
    await partner.patch(`/accounts/${account.id}/sequences/${drip.id}`, {
      steps: [{ type: 'fixed', message: 'v2' }],
      is_default: true,
    });
    // The account requires consent (its default): one lead imported with it, one given it later, one
    // without it (held, then released when the account stops requiring it, below).
    const consent = { method: 'web_form', captured_at: '2026-01-05T10:00:00Z', ip_address: '203.0.113.7' };
    await partner.post(`/accounts/${account.id}/leads/bulk`, {
      leads: [
        { phone: '+15125550304', auto_sequence: true },
        { phone: '+15125550305', auto_sequence: true, first_name: 'Eve', consent },
      ],
    });
    await partner.post(`/accounts/${account.id}/sequences/${once1.id}/enroll`, { phone: '+15125550304' });
    await partner.post(`/accounts/${account.id}/sequences/${ai.id}/enroll`, { phone: '+15125550304' });
    await partner.post(`/accounts/${account.id}/sequences/${once1.id}/enroll`, { phone: '+15125550303' });
    await partner.post(`/accounts/${account.id}/leads/+15125550303/consent`, { ...consent, method: 'paper' });
    await inboundSms(account.phone_number, '+15125550305', 'Hello?', 'SM00000000000000000000000000000305');
    await inboundSms(account.phone_number, '+15125550304', 'STOP', 'SM00000000000000000000000000000304');
    await partner.delete(`/accounts/${account.id}/sequences/${ai.id}`);
    await partner.delete(`/accounts/${account.id}/leads/+15125550305`);
    await partner.post(`/accounts/${account.id}/leads`, { phone: '+15125550305' });
    await partner.patch(`/accounts/${account.id}`, { consent_required: false });
    await partner.delete(`/accounts/${account.id}`);

    const once = await readModels();
    expect(once.leads).toHaveLength(5);
    expect(once.sequence_enrollments!.length).toBeGreaterThanOrEqual(4);
    expect(once.messages!.length).toBeGreaterThanOrEqual(4);
    // Grants, and the STOPs as revocations.
    expect(once.consent_records!.length).toBeGreaterThanOrEqual(4);

    const events: DomainEvent[] = (await accountEvents(system.services)).filter(
      (event) => event.account_id === account.id,
    );
    await system.services.db.transaction().execute(async (trx) => {
      for (const projection of projections) {
        const handled = events.filter((event) => projection.handles.has(event.type));
        if (handled.length > 0) await projection.apply(trx, handled);
      }
    });
    expect(await readModels()).toEqual(once);

    // `npm run rebuild`: every read model projected afresh from offset 0 is the same.
    await system.rebuildReadModels();
    expect(await readModels()).toEqual(once);
  });
});
