import { describe, expect, it } from 'vitest';
import { accountEvents, logSize } from '@leadline/test-kit';
import { system, acme, useLeadsSystem, newAccount } from './leads-system';

useLeadsSystem();

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
