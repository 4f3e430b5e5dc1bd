import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountEvents, logSize } from '@leadline/test-kit';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

let system: TestSystem;
let acme: PartnerClient;
let other: PartnerClient;

beforeAll(async () => {
  system = await startSystem();
  acme = partnerClient(system.app, await system.createPartner('Acme CRM'));
  other = partnerClient(system.app, await system.createPartner('Other CRM'));
});
afterAll(() => system?.close());

async function newAccount(client = acme, name = 'Lead Co') {
  const { body } = await client.post('/accounts', { name });
  return body.id as string;
}

/** Marks requirements as collected for a lead, as the AI agent's events will once they exist. */
async function collect(accountId: string, phone: string, requirementIds: string[]) {
  const lead = await system.services.db
    .selectFrom('leads')
    .select('id')
    .where('account_id', '=', accountId)
    .where('phone', '=', phone)
    .executeTakeFirstOrThrow();
  await system.services.db
    .insertInto('lead_checklist_items')
    .values(
      requirementIds.map((requirement_id) => ({
        lead_id: lead.id,
        requirement_id,
        account_id: accountId,
        value: 'ana@example.com',
        file_url: null,
        collected_at: new Date('2026-03-01T12:00:00Z'),
      })),
    )
    .execute();
}

describe('importing leads', () => {
  it('creates a lead (201), then deduplicates: skipped when nothing is new, updated when an empty field fills', async () => {
    const account = await newAccount();
    const created = await acme.post(`/accounts/${account}/leads`, {
      phone: '(512) 555-0101',
      name: 'Ana Diaz',
      source: 'application',
      metadata: { loan: 'fha' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      success: true,
      action: 'created',
      consent_recorded: false,
      lead: {
        phone: '+15125550101',
        name: 'Ana Diaz',
        email: null,
        source: 'application',
        external_id: null,
        status: 'new',
        sequence_enrolled: false,
        created_at: expect.any(String),
      },
    });

    const skipped = await acme.post(`/accounts/${account}/leads`, {
      phone: '+15125550101',
      name: 'Someone Else',
    });
    expect(skipped.status).toBe(200);
    expect(skipped.body.action).toBe('skipped');
    expect(skipped.body.lead.name).toBe('Ana Diaz');

    const updated = await acme.post(`/accounts/${account}/leads`, {
      phone: '5125550101',
      name: 'Not Ana',
      email: 'ana@example.com',
      metadata: { loan: 'va', branch: 'north' },
    });
    expect(updated.status).toBe(200);
    expect(updated.body.action).toBe('updated');
    const { body: details } = await acme.get(`/accounts/${account}/leads/+15125550101`);
    expect(details).toMatchObject({
      name: 'Ana Diaz',
      email: 'ana@example.com',
      metadata: { loan: 'fha', branch: 'north' },
    });
  });

  it('deduplicates by external_id when the phone differs', async () => {
    const account = await newAccount();
    await acme.post(`/accounts/${account}/leads`, { phone: '+15125550102', external_id: 'crm-7' });
    const again = await acme.post(`/accounts/${account}/leads`, {
      phone: '+15125550199',
      external_id: 'crm-7',
      company: 'Diaz Homes',
    });
    expect(again.body).toMatchObject({
      action: 'updated',
      lead: { phone: '+15125550102', external_id: 'crm-7' },
    });
    expect((await acme.get(`/accounts/${account}/leads`)).body.total).toBe(1);
  });

  it('finds one lead by %2B-encoded, plus-prefixed and bare 10-digit phone in the path', async () => {
    const account = await newAccount();
    await acme.post(`/accounts/${account}/leads`, { phone: '+15125550103', name: 'Path Lead' });
    for (const phone of ['%2B15125550103', '+15125550103', '5125550103']) {
      const response = await acme.get(`/accounts/${account}/leads/${phone}`);
      expect(response.status, phone).toBe(200);
      expect(response.body.name).toBe('Path Lead');
    }
    expect((await acme.get(`/accounts/${account}/leads/5125550000`)).status).toBe(404);
  });

  it('turns twenty concurrent imports of one phone into exactly one lead.created and one lead', async () => {
    const account = await newAccount();
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        acme.post(`/accounts/${account}/leads`, {
          phone: '+15125550104',
          ...(i === 7 && { email: 'x@example.com' }),
        }),
      ),
    );
    expect(responses.filter((response) => response.body.action === 'created')).toHaveLength(1);
    expect(responses.every((response) => response.status === 200 || response.status === 201)).toBe(true);
    const created = (await accountEvents(system.services)).filter(
      (event) => event.type === 'lead.created' && event.account_id === account,
    );
    expect(created).toHaveLength(1);
    expect((await acme.get(`/accounts/${account}/leads`)).body.total).toBe(1);
    expect((await acme.get(`/accounts/${account}`)).body.stats.total_leads).toBe(1);
  });

  it('decides concurrent single imports into one account in fewer commands, each answered and traced as if alone', async () => {
    const account = await newAccount();
    /** Commands decided so far by this process's API (its metrics). */
    const decided = async () => {
      const text = (await system.app.inject({ method: 'GET', url: '/metrics' })).body;
      const series = 'leadline_command_stage_duration_seconds_count{stage="decide"} ';
      return Number(
        text
          .split('\n')
          .find((line) => line.startsWith(series))!
          .slice(series.length),
      );
    };
    const phones = Array.from({ length: 8 }, (_, i) => `+1512555${String(710 + i).padStart(4, '0')}`);
    const before = await decided();
    // Each number twice at once: once bare, once with a name; whichever is decided first creates it.
    const responses = await Promise.all(
      phones.flatMap((phone, i) => [
        acme.post(`/accounts/${account}/leads`, { phone }),
        acme.post(`/accounts/${account}/leads`, { phone, name: `Lead ${i}` }),
      ]),
    );
    expect((await decided()) - before).toBeLessThan(responses.length);

    phones.forEach((phone, i) => {
      const [bare, named] = [responses[2 * i]!, responses[2 * i + 1]!];
      const actions = [bare.body.action, named.body.action];
      // As if decided one after the other: the second of the two fills the name or has nothing new.
      expect([
        ['created', 'updated'],
        ['skipped', 'created'],
      ]).toContainEqual(actions);
      expect(bare.status).toBe(bare.body.action === 'created' ? 201 : 200);
      expect(named.status).toBe(named.body.action === 'created' ? 201 : 200);
      expect(named.body.lead).toMatchObject({ phone, name: `Lead ${i}` });
    });
    const listed = (await acme.get(`/accounts/${account}/leads?limit=100`)).body.leads;
    expect(listed.map((lead: { name: string }) => lead.name).sort()).toEqual(
      phones.map((_, i) => `Lead ${i}`).sort(),
    );
    // Every request's events carry its own correlation id, though requests shared a command.
    const events = (await accountEvents(system.services)).filter(
      (event) => event.account_id === account && event.type.startsWith('lead.'),
    );
    expect(events.map((event) => event.type).sort()).toEqual([
      ...Array.from({ length: 8 }, () => 'lead.created'),
      ...Array.from({ length: events.length - 8 }, () => 'lead.updated'),
    ]);
    expect(new Set(events.map((event) => event.correlation_id)).size).toBe(events.length);
  });

  it('imports a bulk batch: invalid entries reported, in-batch duplicates counted, the rest imported', async () => {
    const account = await newAccount();
    await acme.post(`/accounts/${account}/leads`, { phone: '+15125550110', name: 'Existing' });
    const response = await acme.post(`/accounts/${account}/leads/bulk`, {
      leads: [
        { phone: '+15125550111', name: 'One' },
        { phone: 'not a phone', name: 'Bad Phone' },
        { phone: '+15125550112', email: 'not-an-email' },
        { phone: '5125550111', email: 'one@example.com' },
        { phone: '+15125550110' },
        { phone: '+15125550110', company: 'Filled' },
        { name: 'No Phone' },
        { phone: '+15125550113', status: 'qualified' },
        { phone: '+15125550114', external_id: 'e-1' },
      ],
    });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ success: true, imported: 2, updated: 2, skipped: 1 });
    expect(response.body.errors).toEqual([
      { index: 1, phone: 'not a phone', code: 'invalid_phone', message: expect.stringContaining('phone') },
      {
        index: 2,
        phone: '+15125550112',
        code: 'validation_failed',
        message: expect.stringContaining('email'),
      },
      { index: 6, phone: null, code: 'invalid_phone', message: expect.stringContaining('phone') },
      {
        index: 7,
        phone: '+15125550113',
        code: 'validation_failed',
        message: expect.stringContaining('status'),
      },
    ]);
    const { body: one } = await acme.get(`/accounts/${account}/leads/+15125550111`);
    expect(one).toMatchObject({ name: 'One', email: 'one@example.com' });
    expect((await acme.get(`/accounts/${account}/leads/+15125550110`)).body.company).toBe('Filled');
    expect((await acme.get(`/accounts/${account}/leads`)).body.total).toBe(3);
  });

  it('imports 1,000 leads in one request, and refuses 1,001 while importing nothing', async () => {
    const account = await newAccount();
    const leads = Array.from({ length: 1001 }, (_, i) => ({
      phone: `+1512556${String(i).padStart(4, '0')}`,
    }));
    const before = await logSize(system.services);
    const tooMany = await acme.post(`/accounts/${account}/leads/bulk`, { leads });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.code).toBe('validation_failed');
    expect(await logSize(system.services)).toBe(before);

    const ok = await acme.post(`/accounts/${account}/leads/bulk`, { leads: leads.slice(0, 1000) });
    expect(ok.body).toMatchObject({ imported: 1000, updated: 0, skipped: 0, errors: [] });
    expect((await acme.get(`/accounts/${account}/leads?limit=1`)).body.total).toBe(1000);
    expect((await acme.get(`/accounts/${account}`)).body.stats.total_leads).toBe(1000);
  });

  it.each([
    ['a missing phone', { name: 'X' }, 'body.phone'],
    ['an unparseable phone', { phone: '12' }, 'body.phone'],
    ['a bad email', { phone: '+15125550120', email: 'nope' }, 'body.email'],
    ['a status on import', { phone: '+15125550120', status: 'new' }, 'body.status'],
  ])('answers %s with a 400 problem and writes nothing', async (_case, body, field) => {
    const account = await newAccount();
    const before = await logSize(system.services);
    const response = await acme.post(`/accounts/${account}/leads`, body);
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('validation_failed');
    expect(response.body.errors.map((error: { field: string }) => error.field)).toContain(field);
    expect(await logSize(system.services)).toBe(before);
  });
});

describe('managing leads', () => {
  it('patches only the given fields, and a status change is a lead.status_changed event', async () => {
    const account = await newAccount();
    await acme.post(`/accounts/${account}/leads`, {
      phone: '+15125550130',
      name: 'Pat',
      email: 'pat@example.com',
      notes: 'likes mornings',
    });
    const patched = await acme.patch(`/accounts/${account}/leads/+15125550130`, {
      status: 'qualified',
      notes: null,
      company: 'Pat Co',
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      name: 'Pat',
      email: 'pat@example.com',
      notes: null,
      company: 'Pat Co',
      status: 'qualified',
    });
    const events = (await accountEvents(system.services)).filter(
      (event) => event.account_id === account && event.type.startsWith('lead.'),
    );
    expect(events.map((event) => event.type)).toEqual([
      'lead.created',
      'lead.updated',
      'lead.status_changed',
    ]);
    expect(events[2]!.data).toMatchObject({
      phone: '+15125550130',
      previous_status: 'new',
      new_status: 'qualified',
    });

    const before = await logSize(system.services);
    const bad = await acme.patch(`/accounts/${account}/leads/+15125550130`, { status: 'won' });
    expect(bad.status).toBe(400);
    expect(
      (await acme.patch(`/accounts/${account}/leads/+15125550130`, { phone: '+15125550131' })).status,
    ).toBe(400);
    expect(await logSize(system.services)).toBe(before);
  });

  it('deletes a lead with its checklist progress, and a new import starts afresh', async () => {
    const account = await newAccount();
    const { body: requirement } = await acme.post(`/accounts/${account}/requirements`, {
      name: 'Email',
      type: 'email',
    });
    await acme.post(`/accounts/${account}/leads`, { phone: '+15125550140', name: 'Gone Soon' });
    await collect(account, '+15125550140', [requirement.id]);
    await acme.patch(`/accounts/${account}/leads/+15125550140`, { status: 'lost' });

    const deleted = await acme.delete(`/accounts/${account}/leads/+15125550140`);
    expect(deleted.body).toEqual({ success: true, deleted: true });
    expect((await acme.get(`/accounts/${account}/leads/+15125550140`)).status).toBe(404);
    expect((await acme.delete(`/accounts/${account}/leads/+15125550140`)).status).toBe(404);
    expect((await acme.get(`/accounts/${account}`)).body.stats.total_leads).toBe(0);

    const again = await acme.post(`/accounts/${account}/leads`, { phone: '+15125550140' });
    expect(again.body).toMatchObject({ action: 'created', lead: { status: 'new', name: null } });
    const { body: checklist } = await acme.get(`/accounts/${account}/leads/+15125550140/checklist`);
    expect(checklist).toMatchObject({ completed_count: 0, total_count: 1, progress: 0 });
  });

  it('lists with status, source and search filters, pagination and checklist progress', async () => {
    const account = await newAccount();
    const { body: required } = await acme.post(`/accounts/${account}/requirements`, {
      name: 'ID',
      type: 'document',
    });
    await acme.post(`/accounts/${account}/requirements`, { name: 'Notes', type: 'text', required: false });
    await acme.post(`/accounts/${account}/leads/bulk`, {
      leads: [
        { phone: '+15125550150', name: 'Maria Lopez', source: 'application' },
        { phone: '+15125550151', name: 'John Smith', email: 'jsmith@example.com', source: 'collection' },
        { phone: '+17375550152', name: 'Lee Wong', source: 'application' },
      ],
    });
    await acme.patch(`/accounts/${account}/leads/+17375550152`, { status: 'contacted' });
    await collect(account, '+15125550150', [required.id]);

    const all = await acme.get(`/accounts/${account}/leads`);
    expect(all.body).toMatchObject({ total: 3, limit: 50, offset: 0 });
    expect(all.body.leads[0]).toEqual({
      phone: expect.any(String),
      name: expect.any(String),
      email: null,
      status: expect.any(String),
      source: expect.any(String),
      checklist_progress: expect.any(Number),
      last_message_at: null,
      created_at: expect.any(String),
    });
    const progress = Object.fromEntries(
      all.body.leads.map((lead: { phone: string; checklist_progress: number }) => [
        lead.phone,
        lead.checklist_progress,
      ]),
    );
    expect(progress).toEqual({ '+15125550150': 1, '+15125550151': 0, '+17375550152': 0 });

    const names = async (query: string) =>
      (await acme.get(`/accounts/${account}/leads?${query}`)).body.leads
        .map((lead: { name: string }) => lead.name)
        .sort();
    expect(await names('status=contacted')).toEqual(['Lee Wong']);
    expect(await names('source=application')).toEqual(['Lee Wong', 'Maria Lopez']);
    expect(await names('search=maria')).toEqual(['Maria Lopez']);
    expect(await names('search=JSMITH@')).toEqual(['John Smith']);
    expect(await names('search=737555')).toEqual(['Lee Wong']);
    expect(await names('search=100%25')).toEqual([]);
    expect((await acme.get(`/accounts/${account}/leads?limit=2&offset=2`)).body.leads).toHaveLength(1);
    for (const query of ['limit=0', 'limit=251', 'offset=-1', 'status=won']) {
      expect((await acme.get(`/accounts/${account}/leads?${query}`)).status, query).toBe(400);
    }
  });

  it('returns the full details of a lead', async () => {
    const account = await newAccount();
    const { body: email } = await acme.post(`/accounts/${account}/requirements`, {
      name: 'Email',
      type: 'email',
    });
    await acme.post(`/accounts/${account}/requirements`, { name: 'Pay stub', type: 'document' });
    await acme.post(`/accounts/${account}/leads`, {
      phone: '+15125550160',
      name: 'Dee Tail',
      company: 'Acme',
      external_id: 'd-1',
      source: 'application',
    });
    await collect(account, '+15125550160', [email.id]);
    const { body } = await acme.get(`/accounts/${account}/leads/%2B15125550160`);
    expect(body).toMatchObject({
      phone: '+15125550160',
      name: 'Dee Tail',
      email: null,
      company: 'Acme',
      status: 'new',
      source: 'application',
      external_id: 'd-1',
      checklist: {
        progress: 0.5,
        items: [
          {
            name: 'Email',
            type: 'email',
            status: 'completed',
            collected_at: '2026-03-01T12:00:00.000Z',
            value: 'ana@example.com',
          },
          { name: 'Pay stub', type: 'document', status: 'pending' },
        ],
      },
      conversation: { message_count: 0, last_message_at: null, summary: '', needs_handoff: false },
      sequence: null,
    });
  });
});

describe('requirements and checklists', () => {
  it('creates, lists, patches and deletes requirements; deleting keeps collected data', async () => {
    const account = await newAccount();
    const created = await acme.post(`/accounts/${account}/requirements`, {
      name: 'Photo ID',
      type: 'document',
      description: 'A driver license or passport',
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      name: 'Photo ID',
      type: 'document',
      description: 'A driver license or passport',
      required: true,
      created_at: expect.any(String),
    });
    const optional = await acme.post(`/accounts/${account}/requirements`, {
      name: 'Birthday',
      type: 'date',
      required: false,
    });
    expect(
      (await acme.post(`/accounts/${account}/requirements`, { name: 'photo id', type: 'text' })).status,
    ).toBe(409);

    const patched = await acme.patch(`/accounts/${account}/requirements/${optional.body.id}`, {
      required: true,
      description: 'DOB',
    });
    expect(patched.body).toMatchObject({ name: 'Birthday', required: true, description: 'DOB' });
    expect(
      (await acme.get(`/accounts/${account}/requirements`)).body.requirements.map(
        (r: { name: string }) => r.name,
      ),
    ).toEqual(['Photo ID', 'Birthday']);

    await acme.post(`/accounts/${account}/leads`, { phone: '+15125550170' });
    await collect(account, '+15125550170', [optional.body.id]);
    const deleted = await acme.delete(`/accounts/${account}/requirements/${optional.body.id}`);
    expect(deleted.body).toEqual({ success: true, deleted: true });
    expect((await acme.get(`/accounts/${account}/requirements`)).body.requirements).toHaveLength(1);
    expect((await acme.delete(`/accounts/${account}/requirements/${optional.body.id}`)).status).toBe(404);
    const kept = await system.services.db
      .selectFrom('lead_checklist_items')
      .select('value')
      .where('requirement_id', '=', optional.body.id)
      .execute();
    expect(kept).toEqual([{ value: 'ana@example.com' }]);
  });

  it('counts required and optional items as the checklist rule says', async () => {
    const account = await newAccount();
    const ids = [];
    for (const [name, required] of [
      ['ID', true],
      ['Stub', true],
      ['Email', false],
    ] as const) {
      ids.push(
        (await acme.post(`/accounts/${account}/requirements`, { name, type: 'text', required })).body.id,
      );
    }
    await acme.post(`/accounts/${account}/leads`, { phone: '+15125550180' });
    await collect(account, '+15125550180', [ids[0], ids[2]]);
    const { body } = await acme.get(`/accounts/${account}/leads/5125550180/checklist`);
    expect(body).toMatchObject({ completed_count: 2, total_count: 3, progress: 0.5 });
    expect(
      body.checklist.map((item: { name: string; status: string; required: boolean }) => [
        item.name,
        item.status,
        item.required,
      ]),
    ).toEqual([
      ['ID', 'completed', true],
      ['Stub', 'pending', true],
      ['Email', 'completed', false],
    ]);
  });

  it.each([
    ['an unknown type', { name: 'X', type: 'photo' }],
    ['a missing name', { type: 'text' }],
    ['a missing type', { name: 'X' }],
  ])('answers %s with a 400 problem and writes nothing', async (_case, body) => {
    const account = await newAccount();
    const before = await logSize(system.services);
    const response = await acme.post(`/accounts/${account}/requirements`, body);
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('validation_failed');
    expect(await logSize(system.services)).toBe(before);
  });
});

describe('usage', () => {
  it('counts imported leads per account and period, with active accounts, filters and grouping', async () => {
    const partner = partnerClient(system.app, await system.createPartner('Billing CRM'));
    const first = await newAccount(partner, 'First');
    const second = await newAccount(partner, 'Second');
    await partner.post(`/accounts/${first}/leads/bulk`, {
      leads: [{ phone: '+15125550190' }, { phone: '+15125550191' }, { phone: '+15125550190' }],
    });
    await partner.post(`/accounts/${second}/leads`, { phone: '+15125550192' });
    await partner.delete(`/accounts/${second}`);

    const usage = await partner.get('/usage?group_by=account');
    expect(usage.status).toBe(200);
    expect(usage.body).toEqual({
      period: new Date().toISOString().slice(0, 7),
      totals: {
        conversations: 0,
        messages_sent: 0,
        messages_received: 0,
        leads_imported: 3,
        documents_collected: 0,
        sequences_completed: 0,
        active_accounts: 2,
      },
      by_account: [
        {
          account_id: first,
          account_name: 'First',
          conversations: 0,
          messages_sent: 0,
          messages_received: 0,
          leads_imported: 2,
          documents_collected: 0,
        },
        {
          account_id: second,
          account_name: 'Second',
          conversations: 0,
          messages_sent: 0,
          messages_received: 0,
          leads_imported: 1,
          documents_collected: 0,
        },
      ],
    });
    expect((await partner.get('/usage')).body.by_account).toEqual([]);
    expect((await partner.get(`/usage?account_id=${second}`)).body.totals.leads_imported).toBe(1);
    expect((await partner.get('/usage?period=previous')).body.totals).toMatchObject({
      leads_imported: 0,
      active_accounts: 0,
    });
    expect((await partner.get('/usage?period=2020-01')).body.period).toBe('2020-01');
    for (const period of ['2026-13', 'last', '2026-1']) {
      expect((await partner.get(`/usage?period=${period}`)).status, period).toBe(400);
    }
    // A query the server cannot read is refused, not answered with the current month.
    for (const query of ['null', 'periode=2020-01']) {
      const refused = await partner.get(`/usage?${query}`);
      expect(refused.status, query).toBe(400);
      expect(refused.body.errors[0].field, query).toBe(`querystring.${query.split('=')[0]}`);
    }
    expect((await partner.get(`/usage?account_id=${await newAccount(acme)}`)).status).toBe(404);
    expect((await partner.get('/usage?group_by=lead')).status).toBe(400);
  });
});

describe('tenancy', () => {
  it("answers 404 on every lead and requirement route for another partner's account, and changes nothing", async () => {
    const account = await newAccount();
    await acme.post(`/accounts/${account}/leads`, { phone: '+15125550200', name: 'Private' });
    const { body: requirement } = await acme.post(`/accounts/${account}/requirements`, {
      name: 'ID',
      type: 'document',
    });
    const before = await logSize(system.services);
    const attempts = await Promise.all([
      other.post(`/accounts/${account}/leads`, { phone: '+15125550201' }),
      other.post(`/accounts/${account}/leads/bulk`, { leads: [{ phone: '+15125550202' }] }),
      other.post(`/accounts/${account}/leads/bulk`, { leads: [{ phone: 'invalid' }] }),
      other.get(`/accounts/${account}/leads`),
      other.get(`/accounts/${account}/leads/+15125550200`),
      other.patch(`/accounts/${account}/leads/+15125550200`, { name: 'Hijacked' }),
      other.delete(`/accounts/${account}/leads/+15125550200`),
      other.get(`/accounts/${account}/leads/+15125550200/checklist`),
      other.post(`/accounts/${account}/requirements`, { name: 'Spy', type: 'text' }),
      other.get(`/accounts/${account}/requirements`),
      other.patch(`/accounts/${account}/requirements/${requirement.id}`, { required: false }),
      other.delete(`/accounts/${account}/requirements/${requirement.id}`),
      other.get(`/usage?account_id=${account}`),
    ]);
    for (const response of attempts) {
      expect(response.status).toBe(404);
      expect(response.body.code).toBe('account_not_found');
    }
    expect(await logSize(system.services)).toBe(before);
    expect((await acme.get(`/accounts/${account}/leads/+15125550200`)).body.name).toBe('Private');
    expect((await acme.get(`/accounts/${account}/requirements`)).body.requirements[0].required).toBe(true);
  });
});
