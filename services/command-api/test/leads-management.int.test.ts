import { describe, expect, it } from 'vitest';
import { accountEvents, logSize } from '@leadline/test-kit';
import { partnerClient } from '../../../system-test/client';
import { system, acme, other, useLeadsSystem, newAccount, collect } from './leads-system';

useLeadsSystem();

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
