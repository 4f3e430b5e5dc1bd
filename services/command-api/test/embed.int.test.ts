import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeClock, logSize } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { openEventStream as openStream } from '../../../system-test/event-stream';
import { startSystem, type TestSystem } from '../../../system-test/system';

let system: TestSystem;
let acme: PartnerClient;
let other: PartnerClient;
const clock = fakeClock();

beforeAll(async () => {
  system = await startSystem({ clock });
  acme = partnerClient(system.app, await system.createPartner('Acme CRM'));
  other = partnerClient(system.app, await system.createPartner('Other CRM'));
});
afterAll(() => system?.close());

async function newAccount(client = acme, fields: Record<string, unknown> = {}) {
  const { body } = await client.post('/accounts', { name: 'Sunrise Mortgage', ...fields });
  return body.id as string;
}

async function tokenFor(accountId: string, body: Record<string, unknown> = {}, client = acme) {
  const { status, body: answer } = await client.post(`/accounts/${accountId}/embed-token`, body);
  expect(status).toBe(200);
  return answer.token as string;
}

/** The dashboard's view of the API: its token as a Bearer token, paths under /embed/api. */
function embedClient(token: string) {
  const call = async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown) => {
    const response = await system.app.inject({
      method,
      url: `/embed/api${path}`,
      headers: { authorization: `Bearer ${token}` },
      ...(body !== undefined && { payload: body as object }),
    });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- assertions read any field
    return { status: response.statusCode, body: (response.body ? response.json() : undefined) as any };
  };
  return {
    get: (path: string) => call('GET', path),
    post: (path: string, body?: unknown) => call('POST', path, body ?? {}),
    patch: (path: string, body: unknown) => call('PATCH', path, body),
    delete: (path: string) => call('DELETE', path),
  };
}

/** A context file upload through the embed API, as the dashboard's file picker sends it. */
const uploadContextFile = async (token: string, accountId: string) =>
  system.app.inject({
    method: 'POST',
    url: `/embed/api/accounts/${accountId}/context/files`,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'multipart/form-data; boundary=b',
    },
    payload:
      '--b\r\nContent-Disposition: form-data; name="file"; filename="faq.md"\r\nContent-Type: text/markdown\r\n\r\n# FAQ\nWe lend in Texas.\r\n--b--\r\n',
  });

describe('creating embed tokens', () => {
  it('answers a token, its expiry and the embed URL, 8 hours by default, with the view only when chosen', async () => {
    const account = await newAccount();
    const plain = await acme.post(`/accounts/${account}/embed-token`, {});
    expect(plain.status).toBe(200);
    expect(plain.body).toEqual({
      token: expect.stringMatching(/^lle_[A-Za-z0-9_-]{43}$/),
      expires_at: new Date(clock.now().getTime() + 28_800_000).toISOString(),
      embed_url: `http://127.0.0.1:8080/embed?token=${plain.body.token}`,
    });
    const leads = await acme.post(`/accounts/${account}/embed-token`, { view: 'leads', expires_in: 86_400 });
    expect(leads.body.embed_url).toBe(`http://127.0.0.1:8080/embed?token=${leads.body.token}&view=leads`);
    expect(leads.body.expires_at).toBe(new Date(clock.now().getTime() + 86_400_000).toISOString());
  });

  it('stores only a hash of the token, with the account, role, user name and parent origin', async () => {
    const account = await newAccount();
    const token = await tokenFor(account, {
      user_name: 'Dana Broker',
      parent_origin: 'https://crm.example.com',
    });
    const rows = await system.services.db
      .selectFrom('embed_tokens')
      .selectAll()
      .where('account_id', '=', account)
      .execute();
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(token);
    expect(rows[0]).toMatchObject({
      user_name: 'Dana Broker',
      user_role: 'admin',
      view: 'full',
      parent_origin: 'https://crm.example.com',
    });
  });

  it.each([
    [{ expires_in: 86_401 }, 'body.expires_in'],
    [{ expires_in: 0 }, 'body.expires_in'],
    [{ expires_in: -5 }, 'body.expires_in'],
    [{ expires_in: 1.5 }, 'body.expires_in'],
    [{ view: 'calendar' }, 'body.view'],
    [{ user_role: 'viewer' }, 'body.user_role'],
    [{ parent_origin: 'https://crm.example.com/page' }, 'body.parent_origin'],
    [{ parent_origin: 'crm.example.com' }, 'body.parent_origin'],
    [{ parent_origin: 'javascript:alert(1)' }, 'body.parent_origin'],
    [{ colour: 'red' }, 'body'],
  ])('refuses %j with a 400 naming the field, and stores nothing', async (body, field) => {
    const account = await newAccount();
    const response = await acme.post(`/accounts/${account}/embed-token`, body);
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('validation_failed');
    expect(response.body.errors.map((error: { field: string }) => error.field).join()).toContain(field);
    const rows = await system.services.db
      .selectFrom('embed_tokens')
      .select('id')
      .where('account_id', '=', account)
      .execute();
    expect(rows).toEqual([]);
  });

  it("is a 404 for another partner's account and a 409 for a deactivated one", async () => {
    const account = await newAccount();
    expect((await other.post(`/accounts/${account}/embed-token`, {})).status).toBe(404);
    await acme.delete(`/accounts/${account}`);
    const refused = await acme.post(`/accounts/${account}/embed-token`, {});
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('account_deactivated');
  });
});

describe('the embed API', () => {
  it('authenticates by the token alone and shows the account branding', async () => {
    const account = await newAccount(acme, {
      company_name: 'Sunrise Home Loans',
      branding: { logo_url: 'https://cdn.example.com/logo.png', accent_color: '#0F766E' },
    });
    const token = await tokenFor(account, { user_name: 'Dana', user_role: 'member', view: 'leads' });
    const session = await embedClient(token).get('/session');
    expect(session.status).toBe(200);
    expect(session.body).toMatchObject({
      account: {
        id: account,
        company_name: 'Sunrise Home Loans',
        logo_url: 'https://cdn.example.com/logo.png',
        accent_color: '#0F766E',
      },
      user: { name: 'Dana', role: 'member' },
      view: 'leads',
      capabilities: { manage_leads: false, send_messages: true },
    });
    const withPartnerKey = await system.app.inject({
      method: 'GET',
      url: '/embed/api/session',
      headers: { 'x-partner-key': 'llk_whatever', authorization: 'Bearer llk_notatoken' },
    });
    expect(withPartnerKey.statusCode).toBe(401);
    expect(withPartnerKey.json().code).toBe('invalid_embed_token');
    const missing = await system.app.inject({ method: 'GET', url: '/embed/api/session' });
    expect(missing.json()).toMatchObject({ status: 401, code: 'missing_embed_token' });
  });

  it("confines every route to the token's account: other accounts, of any partner, are 404s", async () => {
    const mine = await newAccount();
    const sibling = await newAccount();
    const foreign = await newAccount(other);
    await acme.post(`/accounts/${sibling}/leads`, { phone: '+15125550110' });
    const embed = embedClient(await tokenFor(mine, { user_role: 'owner' }));
    for (const accountId of [sibling, foreign]) {
      for (const [method, path] of [
        ['GET', `/accounts/${accountId}/leads`],
        ['GET', `/accounts/${accountId}/leads/+15125550110`],
        ['GET', `/accounts/${accountId}/conversations`],
        ['GET', `/accounts/${accountId}/requirements`],
        ['POST', `/accounts/${accountId}/leads`],
        ['DELETE', `/accounts/${accountId}/leads/+15125550110`],
        ['GET', `/accounts/${accountId}/events`],
      ] as const) {
        const response =
          method === 'GET'
            ? await embed.get(path)
            : method === 'POST'
              ? await embed.post(path, { phone: '+15125550111' })
              : await embed.delete(path);
        expect({ path, status: response.status, code: response.body.code }).toEqual({
          path,
          status: 404,
          code: 'account_not_found',
        });
      }
    }
    expect((await acme.get(`/accounts/${sibling}/leads`)).body.total).toBe(1);
    // Its own account's lead of another phone is a plain 404 too.
    expect((await embed.get(`/accounts/${mine}/leads/+15125550110`)).status).toBe(404);
  });

  it('lets a member read, message, change a status and resume the AI, and nothing else (403)', async () => {
    const account = await newAccount();
    await acme.post(`/accounts/${account}/leads`, { phone: '+15125550120', name: 'Ana' });
    const member = embedClient(await tokenFor(account, { user_role: 'member', user_name: 'Dana Broker' }));
    const phone = encodeURIComponent('+15125550120');
    expect((await member.get(`/accounts/${account}/leads`)).body.total).toBe(1);
    expect((await member.get(`/accounts/${account}/requirements`)).status).toBe(200);
    const sent = await member.post(`/accounts/${account}/conversations/${phone}/messages`, {
      body: 'Hi Ana, this is Dana.',
      sender_name: 'Someone else',
    });
    expect(sent.status).toBe(200);
    const events = await system.services.db
      .selectFrom('messages')
      .selectAll()
      .where('account_id', '=', account)
      .execute();
    expect(events[0]).toMatchObject({
      body: 'Hi Ana, this is Dana.',
      sender_name: 'Dana Broker',
      source: 'manual',
    });
    expect((await member.post(`/accounts/${account}/conversations/${phone}/resume-ai`)).status).toBe(200);
    const changed = await member.patch(`/accounts/${account}/leads/${phone}`, { status: 'qualified' });
    expect(changed.status).toBe(200);
    expect(changed.body.status).toBe('qualified');

    for (const [call, what] of [
      [() => member.patch(`/accounts/${account}/leads/${phone}`, { name: 'Renamed' }), 'edit a lead'],
      [
        () => member.patch(`/accounts/${account}/leads/${phone}`, { status: 'lost', notes: 'x' }),
        'edit a lead',
      ],
      [() => member.delete(`/accounts/${account}/leads/${phone}`), 'delete a lead'],
      [() => member.post(`/accounts/${account}/leads`, { phone: '+15125550121' }), 'import a lead'],
      [
        () => member.post(`/accounts/${account}/leads/bulk`, { leads: [{ phone: '+15125550122' }] }),
        'import leads',
      ],
      [
        () => member.post(`/accounts/${account}/requirements`, { name: 'W-2', type: 'document' }),
        'add a requirement',
      ],
    ] as const) {
      const refused = await call();
      expect({ what, status: refused.status, code: refused.body.code }).toEqual({
        what,
        status: 403,
        code: 'embed_role_forbidden',
      });
    }
    const lead = await acme.get(`/accounts/${account}/leads/${phone}`);
    expect(lead.body).toMatchObject({ name: 'Ana', status: 'qualified' });
    expect((await acme.get(`/accounts/${account}/leads`)).body.total).toBe(1);
    expect((await acme.get(`/accounts/${account}/requirements`)).body.requirements).toEqual([]);
  });

  it("lets an admin import, edit and delete leads and manage requirements; actions are the embedded user's", async () => {
    const account = await newAccount();
    const admin = embedClient(await tokenFor(account, { user_name: 'Ari Admin' }));
    const bulk = await admin.post(`/accounts/${account}/leads/bulk`, {
      leads: [{ phone: '5125550130', name: 'Bo' }, { phone: 'not a phone' }],
    });
    expect(bulk.body).toMatchObject({ imported: 1, errors: [{ index: 1, code: 'invalid_phone' }] });
    expect(
      (await admin.patch(`/accounts/${account}/leads/%2B15125550130`, { name: 'Bo Lee' })).body.name,
    ).toBe('Bo Lee');
    expect(
      (await admin.post(`/accounts/${account}/requirements`, { name: 'W-2', type: 'document' })).status,
    ).toBe(201);
    expect((await admin.delete(`/accounts/${account}/leads/%2B15125550130`)).status).toBe(200);
    expect((await acme.get(`/accounts/${account}/leads`)).body.total).toBe(0);
  });

  it('lets an admin build, pause and enroll in sequences and set the AI prompt and context; a member only reads them', async () => {
    const account = await newAccount();
    await acme.post(`/accounts/${account}/leads`, { phone: '+15125550140', name: 'Cy' });
    const admin = embedClient(await tokenFor(account, { user_name: 'Ari Admin' }));
    const member = embedClient(await tokenFor(account, { user_role: 'member' }));
    const created = await admin.post(`/accounts/${account}/sequences`, {
      name: 'New lead follow-up',
      steps: [
        { type: 'fixed', message: 'Hi {{first_name}}, thanks for reaching out!' },
        {
          type: 'ai',
          instructions: 'Ask which loan they are after.',
          delay_hours: 24,
          skip_if_replied: false,
        },
      ],
    });
    expect(created.status).toBe(201);
    expect(
      created.body.steps.map((step: { order: number; type: string }) => [step.order, step.type]),
    ).toEqual([
      [0, 'fixed'],
      [1, 'ai'],
    ]);
    const sequence = created.body.id as string;
    const paused = await admin.patch(`/accounts/${account}/sequences/${sequence}`, { is_active: false });
    expect(paused.body.is_active).toBe(false);
    await admin.patch(`/accounts/${account}/sequences/${sequence}`, { is_active: true, is_default: true });
    const enrolled = await admin.post(`/accounts/${account}/sequences/${sequence}/enroll`, {
      phone: '+15125550140',
    });
    expect(enrolled.body).toMatchObject({ success: true, action: 'enrolled' });
    const enrolledLead = await member.get(`/accounts/${account}/leads/%2B15125550140`);
    expect(enrolledLead.body.sequence).toMatchObject({ sequence_id: sequence, status: 'active' });
    expect(
      (await member.get(`/accounts/${account}/leads/%2B15125550140/sequences`)).body.enrollments,
    ).toMatchObject([{ sequence_id: sequence, status: 'active' }]);
    const prompt = await admin.patch(`/accounts/${account}/settings/prompt`, {
      mode: 'guided',
      role_persona: 'Maya, the loan assistant of {{company}}',
    });
    expect(prompt.status).toBe(200);
    const adminToken = await tokenFor(account);
    expect((await uploadContextFile(adminToken, account)).statusCode).toBe(201);

    const listed = await member.get(`/accounts/${account}/sequences`);
    expect(listed.body.sequences).toMatchObject([
      { id: sequence, name: 'New lead follow-up', is_active: true, is_default: true, enrolled_count: 1 },
    ]);
    expect((await member.get(`/accounts/${account}/settings/prompt`)).body.role_persona).toBe(
      'Maya, the loan assistant of {{company}}',
    );
    expect((await member.get(`/accounts/${account}/context/files`)).status).toBe(200);
    expect((await member.get(`/accounts/${account}/context/urls`)).status).toBe(200);
    for (const [call, what] of [
      [
        () =>
          member.post(`/accounts/${account}/sequences`, {
            name: 'x',
            steps: [{ type: 'fixed', message: 'x' }],
          }),
        'create a sequence',
      ],
      [
        () => member.patch(`/accounts/${account}/sequences/${sequence}`, { is_active: false }),
        'pause a sequence',
      ],
      [() => member.delete(`/accounts/${account}/sequences/${sequence}`), 'delete a sequence'],
      [
        () => member.post(`/accounts/${account}/sequences/${sequence}/enroll`, { phone: '+15125550140' }),
        'enroll a lead',
      ],
      [
        () => member.post(`/accounts/${account}/sequences/${sequence}/unenroll`, { phone: '+15125550140' }),
        'unenroll a lead',
      ],
      [
        () => member.patch(`/accounts/${account}/settings/prompt`, { mode: 'advanced', system_prompt: 'x' }),
        'set the prompt',
      ],
      [
        () => member.post(`/accounts/${account}/context/urls`, { url: 'https://example.com/' }),
        'add a context URL',
      ],
    ] as const) {
      const refused = await call();
      expect({ what, status: refused.status, code: refused.body.code }).toEqual({
        what,
        status: 403,
        code: 'embed_role_forbidden',
      });
    }
    const upload = await uploadContextFile(await tokenFor(account, { user_role: 'member' }), account);
    expect(upload.statusCode).toBe(403);
    expect((await acme.get(`/accounts/${account}/sequences`)).body.sequences[0]).toMatchObject({
      is_active: true,
      enrolled_count: 1,
    });
    expect((await acme.get(`/accounts/${account}/leads/%2B15125550140`)).body.sequence.status).toBe('active');
    const unenrolled = await admin.post(`/accounts/${account}/sequences/${sequence}/unenroll`, {
      phone: '+15125550140',
    });
    expect(unenrolled.body).toEqual({ success: true, action: 'unenrolled' });
    expect((await acme.get(`/accounts/${account}/leads/%2B15125550140`)).body.sequence.status).toBe(
      'cancelled',
    );
    expect((await acme.get(`/accounts/${account}/context/files`)).body.files).toMatchObject([
      { name: 'faq.md', file_type: 'md' },
    ]);
  });

  it("keeps another account's sequences out of reach: a 404 by its account and by its id", async () => {
    const mine = await newAccount();
    const theirs = await newAccount(other);
    await acme.post(`/accounts/${mine}/leads`, { phone: '+15125550150' });
    const { body: foreign } = await other.post(`/accounts/${theirs}/sequences`, {
      name: 'Theirs',
      steps: [{ type: 'fixed', message: 'Hello' }],
    });
    const owner = embedClient(await tokenFor(mine, { user_role: 'owner' }));
    for (const [call, what] of [
      [() => owner.get(`/accounts/${theirs}/sequences`), 'list by their account'],
      [() => owner.get(`/accounts/${theirs}/leads/%2B15125550150/sequences`), "their lead's sequences"],
      [
        () => owner.patch(`/accounts/${theirs}/sequences/${foreign.id}`, { is_active: false }),
        'pause by their account',
      ],
      [() => owner.get(`/accounts/${mine}/sequences/${foreign.id}`), 'read by id'],
      [() => owner.patch(`/accounts/${mine}/sequences/${foreign.id}`, { is_active: false }), 'pause by id'],
      [() => owner.delete(`/accounts/${mine}/sequences/${foreign.id}`), 'delete by id'],
      [
        () => owner.post(`/accounts/${mine}/sequences/${foreign.id}/enroll`, { phone: '+15125550150' }),
        'enroll by id',
      ],
      [
        () => owner.post(`/accounts/${mine}/sequences/${foreign.id}/unenroll`, { phone: '+15125550150' }),
        'unenroll by id',
      ],
      [
        () => owner.patch(`/accounts/${theirs}/settings/prompt`, { mode: 'advanced', system_prompt: 'x' }),
        'their prompt',
      ],
    ] as const) {
      const response = await call();
      expect({ what, status: response.status }).toEqual({ what, status: 404 });
    }
    expect((await owner.get(`/accounts/${mine}/sequences`)).body.total).toBe(0);
    const theirsNow = await other.get(`/accounts/${theirs}/sequences/${foreign.id}`);
    expect(theirsNow.body).toMatchObject({ name: 'Theirs', is_active: true, enrolled_count: 0 });
  });

  it('refuses expired, revoked and deactivated-account tokens with a 401 on every route', async () => {
    const account = await newAccount();
    const shortLived = await tokenFor(account, { expires_in: 60 });
    const revoked = await tokenFor(account);
    const routes = [
      '/session',
      `/accounts/${account}/leads`,
      `/accounts/${account}/conversations`,
      `/accounts/${account}/requirements`,
      `/accounts/${account}/events`,
    ];
    expect((await embedClient(shortLived).get('/session')).status).toBe(200);
    clock.advance(61_000);
    const revoke = await acme.delete(`/accounts/${account}/embed-tokens`);
    expect(revoke.body).toEqual({ success: true, revoked: 1 });
    for (const token of [shortLived, revoked, 'lle_unknown']) {
      for (const route of routes) {
        const response = await embedClient(token).get(route);
        expect({ route, status: response.status, code: response.body.code }).toEqual({
          route,
          status: 401,
          code: 'invalid_embed_token',
        });
      }
    }
    const live = await tokenFor(account);
    expect((await embedClient(live).get('/session')).status).toBe(200);
    await acme.delete(`/accounts/${account}`);
    expect((await embedClient(live).get('/session')).status).toBe(401);
    await acme.patch(`/accounts/${account}`, { status: 'active' });
    expect((await embedClient(live).get('/session')).status).toBe(401);
    expect((await other.delete(`/accounts/${account}/embed-tokens`)).status).toBe(404);
  });
});

describe('embed API limits', () => {
  it('limits each token to its requests a minute, with a 429 problem', async () => {
    const app = await system.appWith({ rateLimitPerMinute: 3 });
    const account = await newAccount();
    const [busy, calm] = [await tokenFor(account), await tokenFor(account)];
    const session = (token: string) =>
      app.inject({
        method: 'GET',
        url: '/embed/api/session',
        headers: { authorization: `Bearer ${token}` },
      });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await session(busy)).statusCode);
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect((await session(busy)).json()).toMatchObject({ status: 429, code: 'rate_limited' });
    expect((await session(calm)).statusCode).toBe(200);
  });
});

describe("the partner API's edge checks", () => {
  it('refuse text no projection can store, for every role, with a 400 naming the request field, writing nothing', async () => {
    const account = await newAccount();
    await acme.post(`/accounts/${account}/leads`, { phone: '+15125550150', name: 'Ana' });
    const member = embedClient(await tokenFor(account, { user_role: 'member' }));
    const admin = embedClient(await tokenFor(account));
    const nul = expect.stringMatching(/NUL/);
    const before = await logSize(system.services);
    for (const embed of [member, admin]) {
      const search = await embed.get(`/accounts/${account}/leads?search=%00`);
      expect(search.status).toBe(400);
      expect(search.body).toMatchObject({
        code: 'validation_failed',
        errors: [{ field: 'querystring.search', message: nul }],
      });
    }
    const renamed = await admin.patch(`/accounts/${account}/leads/%2B15125550150`, { name: 'Ana\u0000' });
    expect(renamed.status).toBe(400);
    expect(renamed.body.errors).toEqual([{ field: 'body.name', message: nul }]);
    const message = await member.post(`/accounts/${account}/conversations/%2B15125550150/messages`, {
      body: 'Hi\u0000',
    });
    expect(message.status).toBe(400);
    expect(message.body.errors).toEqual([{ field: 'body.body', message: nul }]);
    expect(await logSize(system.services)).toBe(before);
    expect((await acme.get(`/accounts/${account}/leads/%2B15125550150`)).body.name).toBe('Ana');
  });

  it('answer a retried write with an Idempotency-Key once, replaying its answer', async () => {
    const account = await newAccount();
    const token = await tokenFor(account);
    const importLead = () =>
      system.app.inject({
        method: 'POST',
        url: `/embed/api/accounts/${account}/leads`,
        headers: { authorization: `Bearer ${token}`, 'idempotency-key': 'import-ana' },
        payload: { phone: '+15125550160', name: 'Ana' },
      });
    const first = await importLead();
    const retry = await importLead();
    expect(first.statusCode).toBe(201);
    expect(retry.statusCode).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body).toBe(first.body);
  });
});

describe('request logs', () => {
  it('never hold an embed token, though the page URL carries one', async () => {
    const lines: string[] = [];
    const app = await system.appWith({
      logger: { level: 'info', stream: { write: (line: string) => void lines.push(line) } },
    });
    const token = await tokenFor(await newAccount());
    await app.inject({ method: 'GET', url: `/embed?token=${token}&view=leads` });
    await app.inject({
      method: 'GET',
      url: '/embed/api/session',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(lines.join('')).toContain('/embed?[redacted]');
    expect(lines.join('')).not.toContain(token);
  });
});

describe('the dashboard page', () => {
  it('is never cached, sends no referrer, and may be framed only by the parent origin the token names', async () => {
    const account = await newAccount();
    const token = await tokenFor(account, { parent_origin: 'https://crm.example.com' });
    const page = await system.app.inject({ method: 'GET', url: `/embed?token=${token}` });
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    expect(page.headers['content-security-policy']).toContain('frame-ancestors https://crm.example.com');
    const open = await system.app.inject({ method: 'GET', url: `/embed?token=${await tokenFor(account)}` });
    expect(open.headers['content-security-policy']).toContain('frame-ancestors *');
  });

  it('may be framed by nobody when the token is missing, unknown, expired or revoked', async () => {
    const account = await newAccount();
    const expired = await tokenFor(account, { expires_in: 60 });
    clock.advance(61_000);
    const revoked = await tokenFor(account, { parent_origin: 'https://crm.example.com' });
    await acme.delete(`/accounts/${account}/embed-tokens`);
    for (const url of [
      '/embed',
      '/embed?token=lle_unknown',
      `/embed?token=${expired}`,
      `/embed?token=${revoked}`,
    ]) {
      const page = await system.app.inject({ method: 'GET', url });
      expect({ url, csp: page.headers['content-security-policy'] }).toEqual({
        url,
        csp: expect.stringContaining("frame-ancestors 'none'"),
      });
      expect(page.headers['content-security-policy']).not.toContain('frame-ancestors *');
    }
  });

  it('answers a 503 problem that nobody may frame when the server has no built dashboard', async () => {
    const app = await system.appWith({ dashboardDir: mkdtempSync(join(tmpdir(), 'no-dashboard-')) });
    const token = await tokenFor(await newAccount());
    const page = await app.inject({ method: 'GET', url: `/embed?token=${token}` });
    expect(page.statusCode).toBe(503);
    expect(page.json()).toMatchObject({ status: 503, code: 'dashboard_not_built' });
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.headers['x-content-type-options']).toBe('nosniff');
  });
});

describe('live updates', () => {
  it("streams only the token's account's changes, and a stream resumed after a gap asks for a refetch", async () => {
    const baseUrl = await system.app.listen({ port: 0, host: '127.0.0.1' });
    const account = await newAccount();
    const sibling = await newAccount();
    const token = await tokenFor(account, { user_role: 'member' });
    const stream = await openStream(baseUrl, account, token);
    const ready = await stream.next();
    expect(ready.event).toBe('ready');

    await acme.post(`/accounts/${sibling}/leads`, { phone: '+15125550150' });
    await acme.post(`/accounts/${account}/leads`, { phone: '+15125550151' });
    const change = await stream.next();
    expect(change).toMatchObject({
      event: 'change',
      data: { conversations: [], leads: ['+15125550151'], checklist_completed: [] },
    });
    expect(BigInt(change.id)).toBeGreaterThan(BigInt(ready.id));

    await acme.patch(`/accounts/${account}/leads/%2B15125550151`, { status: 'qualified' });
    const status = await stream.next();
    expect(status.data).toMatchObject({ leads: ['+15125550151'] });
    stream.close();

    // A change while disconnected: resuming from the last id seen asks the page to refetch.
    await acme.post(`/accounts/${account}/leads`, { phone: '+15125550152' });
    const resumed = await openStream(baseUrl, account, token, status.id);
    expect(await resumed.next()).toMatchObject({ event: 'change', data: { resync: true } });
    resumed.close();
    const current = await openStream(baseUrl, account, token);
    const position = (await current.next()).id;
    current.close();
    const caughtUp = await openStream(baseUrl, account, token, position);
    expect((await caughtUp.next()).event).toBe('ready');
    caughtUp.close();
  });

  it('ends an open stream once its token is revoked, sending nothing more', async () => {
    const baseUrl = await system.app.listen({ port: 0, host: '127.0.0.1' }).catch(() => undefined);
    const url = baseUrl ?? `http://127.0.0.1:${(system.app.server.address() as { port: number }).port}`;
    const account = await newAccount();
    const stream = await openStream(url, account, await tokenFor(account));
    expect((await stream.next()).event).toBe('ready');
    await acme.delete(`/accounts/${account}/embed-tokens`);
    await acme.post(`/accounts/${account}/leads`, { phone: '+15125550160' });
    await expect(stream.next()).rejects.toThrow('stream ended');
  });
});
