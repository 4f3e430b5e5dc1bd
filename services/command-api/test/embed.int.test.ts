import { describe, expect, it } from 'vitest';
import {
  system,
  acme,
  other,
  clock,
  useEmbedSystem,
  newAccount,
  tokenFor,
  embedClient,
  uploadContextFile,
} from './embed-system';

useEmbedSystem();

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
