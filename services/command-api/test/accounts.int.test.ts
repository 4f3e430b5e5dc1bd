import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logSize as accountLogSize } from '@leadline/test-kit';
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

const logSize = () => accountLogSize(system.services);

describe('accounts', () => {
  it('creates an account that a GET returns at once, with a provisioned number and defaults', async () => {
    const created = await acme.post('/accounts', {
      name: 'Sunrise Mortgage',
      branding: { accent_color: '#1A73E8', logo_url: 'https://cdn.example.com/logo.png' },
      metadata: { crm_id: 'c-42' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'Sunrise Mortgage',
      company_name: 'Sunrise Mortgage',
      slug: 'sunrise-mortgage',
      status: 'active',
      forwarding_number: null,
      branding: { accent_color: '#1A73E8', logo_url: 'https://cdn.example.com/logo.png' },
      metadata: { crm_id: 'c-42' },
      deactivated_at: null,
      stats: { total_leads: 0, total_conversations: 0, active_sequences: 0 },
    });
    expect(created.body.phone_number).toMatch(/^\+1\d{10}$/);

    const fetched = await acme.get(`/accounts/${created.body.id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body).toEqual(created.body);
  });

  it('reads its own writes: every create is visible to the GET that follows it', async () => {
    for (let i = 0; i < 20; i++) {
      const created = await acme.post('/accounts', { name: `Read your writes ${i}` });
      expect(created.status).toBe(201);
      expect((await acme.get(`/accounts/${created.body.id}`)).status).toBe(200);
    }
  });

  it('makes slugs unique per partner and never gives one number to two accounts', async () => {
    const first = await acme.post('/accounts', { name: 'Équipe   Alpha!' });
    const second = await acme.post('/accounts', { name: 'equipe alpha' });
    const elsewhere = await other.post('/accounts', { name: 'Equipe Alpha' });
    expect([first.body.slug, second.body.slug, elsewhere.body.slug]).toEqual([
      'equipe-alpha',
      'equipe-alpha-2',
      'equipe-alpha',
    ]);
    const numbers = new Set([first.body.phone_number, second.body.phone_number, elsewhere.body.phone_number]);
    expect(numbers.size).toBe(3);
  });

  it('normalizes a supplied number and refuses one another account already has', async () => {
    const created = await acme.post('/accounts', { name: 'Own Number', phone_number: '(512) 555-0147' });
    expect(created.body.phone_number).toBe('+15125550147');
    const before = await logSize();
    const taken = await other.post('/accounts', { name: 'Thief', phone_number: '+15125550147' });
    expect(taken.status).toBe(409);
    expect(taken.body.code).toBe('phone_number_in_use');
    expect(await logSize()).toBe(before);
  });

  it.each([
    ['a missing name', {}, 'body.name'],
    ['an empty name', { name: '  ' }, 'body.name'],
    ['a bad hex colour', { name: 'X', branding: { accent_color: 'blue' } }, 'body.branding.accent_color'],
    ['a bad phone number', { name: 'X', phone_number: '12345' }, 'body.phone_number'],
    ['a bad forwarding number', { name: 'X', forwarding_number: 'call me' }, 'body.forwarding_number'],
    ['a non-URL logo', { name: 'X', branding: { logo_url: 'logo.png' } }, 'body.branding.logo_url'],
    [
      'a sending rate of 0',
      { name: 'X', sending_rate: { messages_per_second: 0 } },
      'body.sending_rate.messages_per_second',
    ],
    [
      'a sending rate above 100 a second',
      { name: 'X', sending_rate: { messages_per_second: 101 } },
      'body.sending_rate.messages_per_second',
    ],
    [
      'a fractional daily cap',
      { name: 'X', sending_rate: { daily_cap: 1.5 } },
      'body.sending_rate.daily_cap',
    ],
  ])('answers %s with a 400 problem and writes nothing', async (_case, body, field) => {
    const before = await logSize();
    const response = await acme.post('/accounts', body);
    expect(response.status).toBe(400);
    expect(response.headers['content-type']).toContain('application/problem+json');
    expect(response.body).toMatchObject({ status: 400, code: 'validation_failed' });
    expect(response.body.errors.map((error: { field: string }) => error.field)).toContain(field);
    expect(await logSize()).toBe(before);
  });

  it('updates only the given fields, merges metadata, and deactivates and reactivates', async () => {
    const { body: account } = await acme.post('/accounts', {
      name: 'Patch Me',
      branding: { accent_color: '#000000', logo_url: 'https://example.com/a.png' },
      metadata: { keep: 1, drop: 2 },
    });
    const patched = await acme.patch(`/accounts/${account.id}`, {
      company_name: 'Patch Me LLC',
      branding: { accent_color: '#FFFFFF' },
      metadata: { drop: null, added: 'yes' },
      forwarding_number: '5125550199',
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      name: 'Patch Me',
      company_name: 'Patch Me LLC',
      slug: account.slug,
      branding: { accent_color: '#FFFFFF', logo_url: 'https://example.com/a.png' },
      metadata: { keep: 1, added: 'yes' },
      forwarding_number: '+15125550199',
    });
    expect(patched.body.metadata).not.toHaveProperty('drop');

    const deleted = await acme.delete(`/accounts/${account.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({
      id: account.id,
      status: 'deactivated',
      deactivated_at: expect.any(String),
    });
    const again = await acme.delete(`/accounts/${account.id}`);
    expect(again.body).toEqual(deleted.body);
    expect((await acme.get(`/accounts/${account.id}`)).body).toMatchObject({
      status: 'deactivated',
      deactivated_at: deleted.body.deactivated_at,
    });

    const reactivated = await acme.patch(`/accounts/${account.id}`, { status: 'active' });
    expect(reactivated.body).toMatchObject({ status: 'active', deactivated_at: null });
  });

  it("sets the account's sending rate, changes only the given fields, and resets one to the default with null", async () => {
    const { body: account } = await acme.post('/accounts', {
      name: 'Fast Lender',
      sending_rate: { messages_per_second: 2 },
    });
    expect(account.sending_rate).toEqual({ messages_per_second: 2, daily_cap: null });
    const unset = await acme.post('/accounts', { name: 'Default Lender' });
    expect(unset.body.sending_rate).toEqual({ messages_per_second: null, daily_cap: null });

    const capped = await acme.patch(`/accounts/${account.id}`, { sending_rate: { daily_cap: 2000 } });
    expect(capped.status).toBe(200);
    expect(capped.body.sending_rate).toEqual({ messages_per_second: 2, daily_cap: 2000 });
    const reset = await acme.patch(`/accounts/${account.id}`, {
      sending_rate: { messages_per_second: null, daily_cap: 500 },
    });
    expect(reset.body.sending_rate).toEqual({ messages_per_second: null, daily_cap: 500 });
    expect((await acme.get(`/accounts/${account.id}`)).body.sending_rate).toEqual({
      messages_per_second: null,
      daily_cap: 500,
    });

    const before = await logSize();
    const refused = await acme.patch(`/accounts/${account.id}`, {
      sending_rate: { messages_per_second: 0.5, daily_cap: 0 },
    });
    expect(refused.status).toBe(400);
    expect(refused.headers['content-type']).toContain('application/problem+json');
    expect(refused.body.errors.map((error: { field: string }) => error.field)).toEqual([
      'body.sending_rate.daily_cap',
    ]);
    const unknown = await acme.patch(`/accounts/${account.id}`, { sending_rate: { per_minute: 60 } });
    expect(unknown.status).toBe(400);
    expect(await logSize()).toBe(before);
    expect((await acme.get(`/accounts/${account.id}`)).body.sending_rate).toEqual({
      messages_per_second: null,
      daily_cap: 500,
    });
  });

  it('refuses fields that cannot change', async () => {
    const { body: account } = await acme.post('/accounts', { name: 'Immutable' });
    const response = await acme.patch(`/accounts/${account.id}`, { phone_number: '+15125550100' });
    expect(response.status).toBe(400);
    expect((await acme.get(`/accounts/${account.id}`)).body.phone_number).toBe(account.phone_number);
  });

  it('lists with filters and the spec pagination, and refuses out-of-range pages', async () => {
    const mine = partnerClient(system.app, await system.createPartner('Lister'));
    for (const name of ['Alpha Homes', 'Beta Loans', 'Gamma Homes']) await mine.post('/accounts', { name });
    const { body: gamma } = await mine.get('/accounts?search=gamma');
    await mine.delete(`/accounts/${gamma.accounts[0].id}`);

    const page = await mine.get('/accounts?limit=2&offset=0');
    expect(page.body).toMatchObject({ total: 3, limit: 2, offset: 0 });
    expect(page.body.accounts.map((a: { name: string }) => a.name)).toEqual(['Gamma Homes', 'Beta Loans']);
    expect(Object.keys(page.body.accounts[0]).sort()).toEqual(
      ['created_at', 'id', 'name', 'phone_number', 'stats', 'status'].sort(),
    );
    expect((await mine.get('/accounts?limit=2&offset=2')).body.accounts).toHaveLength(1);
    expect((await mine.get('/accounts?search=HOMES')).body.total).toBe(2);
    expect(
      (await mine.get('/accounts?status=deactivated')).body.accounts.map((a: { name: string }) => a.name),
    ).toEqual(['Gamma Homes']);
    expect((await mine.get('/accounts')).body.limit).toBe(50);
    for (const query of ['limit=0', 'limit=251', 'offset=-1', 'limit=abc', 'status=paused']) {
      const response = await mine.get(`/accounts?${query}`);
      expect(response.status, query).toBe(400);
      expect(response.body.code).toBe('validation_failed');
    }
  });

  it('stores team invites as team members and refuses a second invite of one address', async () => {
    const { body: account } = await acme.post('/accounts', { name: 'Team Co' });
    const invited = await acme.post(`/accounts/${account.id}/team/invite`, {
      email: 'Ana@Example.com',
      name: 'Ana',
      phone_number: '5125550111',
    });
    expect(invited.status).toBe(201);
    expect(invited.body).toMatchObject({
      account_id: account.id,
      email: 'Ana@Example.com',
      role: 'member',
      phone_number: '+15125550111',
      status: 'invited',
    });
    const duplicate = await acme.post(`/accounts/${account.id}/team/invite`, { email: 'ana@example.com' });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body.code).toBe('team_member_exists');
    const team = await acme.get(`/accounts/${account.id}/team`);
    expect(team.body.team_members).toHaveLength(1);
    expect((await acme.post(`/accounts/${account.id}/team/invite`, { email: 'not-an-email' })).status).toBe(
      400,
    );
  });

  it("answers 404 on every account route for another partner's account and changes nothing", async () => {
    const { body: account } = await acme.post('/accounts', { name: 'Private', metadata: { secret: true } });
    const before = await logSize();
    const attempts = [
      other.get(`/accounts/${account.id}`),
      other.patch(`/accounts/${account.id}`, { name: 'Hijacked' }),
      other.delete(`/accounts/${account.id}`),
      other.post(`/accounts/${account.id}/team/invite`, { email: 'spy@example.com' }),
      other.get(`/accounts/${account.id}/team`),
    ];
    for (const response of await Promise.all(attempts)) {
      expect(response.status).toBe(404);
      expect(response.body.code).toBe('account_not_found');
    }
    expect((await other.get('/accounts?search=Private')).body.total).toBe(0);
    expect(await logSize()).toBe(before);
    expect((await acme.get(`/accounts/${account.id}`)).body).toEqual(account);
  });

  it('answers 401 without a key or with an unknown one', async () => {
    const missing = await system.app.inject({ method: 'GET', url: '/v1/accounts' });
    expect(missing.statusCode).toBe(401);
    expect(missing.json().code).toBe('missing_api_key');
    const unknown = await partnerClient(system.app, 'llk_not-a-key').get('/accounts');
    expect(unknown.status).toBe(401);
    expect(unknown.body.code).toBe('invalid_api_key');
  });
});
