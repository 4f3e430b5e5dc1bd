import { eventually } from '@leadline/test-kit';
import { describe, expect, it } from 'vitest';
import {
  system,
  twilio,
  acme,
  other,
  dashboardOrigin,
  parentOrigin,
  strangerOrigin,
  useEmbeddedDashboard,
  pages,
  newBrowserContext,
  newAccount,
  createToken,
  embedUrl,
  openEmbedded,
  received,
  waitForMessage,
  screenshot,
  inboundSms,
  deliveryReport,
  text,
} from './embed-dashboard';

useEmbeddedDashboard();

describe('the embedded dashboard', () => {
  it('is white-labeled: the account logo, accent colour and company name, and nothing of ours', async () => {
    const account = await newAccount();
    const { page, frame, thirdParty } = await openEmbedded(embedUrl(await createToken(account.id)));
    await frame.getByRole('tab', { name: 'Conversations' }).waitFor();
    expect(await frame.locator('.company').innerText()).toBe('Sunrise Home Loans');
    expect(await frame.locator('img.logo').getAttribute('src')).toBe(`${parentOrigin}/logo.svg`);
    expect(await frame.title()).toBe('Sunrise Home Loans');
    const accent = await frame.locator('.tab.active').evaluate((element) => getComputedStyle(element).color);
    expect(accent).toBe('rgb(15, 118, 110)');
    const border = await frame
      .locator('.brand')
      .evaluate((element) => getComputedStyle(element).borderBottomColor);
    expect(border).toBe('rgb(15, 118, 110)');
    const html = await frame.content();
    expect(html.toLowerCase()).not.toContain('leadline');
    // The token left the address bar at once.
    expect(frame.url()).toBe(`${dashboardOrigin}/embed`);
    expect(thirdParty.filter((url) => !url.endsWith('/logo.svg'))).toEqual([]);
    await screenshot(page, 'full');
  });

  it('shows the conversations view: handoff badges and filter, the thread newest at the bottom, a manual message by the user, resume AI', async () => {
    const account = await newAccount();
    await inboundSms(account.number, '+15125550101', 'Hi, is this about my loan?');
    await inboundSms(account.number, '+15125550102', 'I need help with my application');
    await system.services.commands.append({
      stream: { topic: 'account', accountId: account.id },
      context: {
        partnerId: (
          await system.services.db
            .selectFrom('accounts')
            .select('partner_id')
            .where('id', '=', account.id)
            .executeTakeFirstOrThrow()
        ).partner_id,
        actor: { kind: 'system', service: 'ai-agent' },
        correlationId: 'handoff-test',
      },
      events: [
        {
          type: 'conversation.handoff_requested',
          data: { phone: '+15125550102', lead_id: null, lead_name: null, reason: 'asks for a person' },
        },
      ],
    });
    const token = await createToken(account.id, { view: 'conversations', parent_origin: parentOrigin });
    const { page, frame } = await openEmbedded(embedUrl(token));
    const list = frame.getByRole('list', { name: 'Conversations' });
    await list.getByText('+1 (512) 555-0102').waitFor();
    expect(await frame.getByRole('tab').count()).toBe(0);
    expect(await list.locator('.badge.handoff').count()).toBe(1);
    await frame.getByLabel('Needs attention only').check();
    await eventually(async () => ((await list.locator('li').count()) === 1 ? true : undefined));
    await frame.getByLabel('Needs attention only').uncheck();

    await list.locator('[data-phone="+15125550101"]').click();
    const opened = await waitForMessage(page, 'service:conversation_selected');
    expect(opened).toEqual({
      origin: dashboardOrigin,
      data: { type: 'service:conversation_selected', data: { phone: '+15125550101' } },
    });
    await frame.getByRole('list', { name: 'Messages' }).getByText('Hi, is this about my loan?').waitFor();
    await frame.getByLabel('Message', { exact: true }).fill('Yes! This is Dana from Sunrise.');
    await frame.getByRole('button', { name: 'Send' }).click();
    const sent = await waitForMessage(page, 'service:message_sent');
    expect(sent).toEqual({
      origin: dashboardOrigin,
      data: { type: 'service:message_sent', data: { phone: '+15125550101' } },
    });
    const thread = frame.getByRole('list', { name: 'Messages' });
    await thread.getByText('Yes! This is Dana from Sunrise.').waitFor();
    expect(await thread.locator('li').last().innerText()).toContain('Yes! This is Dana from Sunrise.');
    expect(await thread.locator('li').last().innerText()).toContain('Dana Broker');
    const stored = await acme.get(`/accounts/${account.id}/conversations/%2B15125550101/messages`);
    expect(stored.body.messages[0]).toMatchObject({
      body: 'Yes! This is Dana from Sunrise.',
      source: 'manual',
      sender_name: 'Dana Broker',
    });

    // The manual message paused the AI; resuming it from the thread.
    await frame.getByRole('button', { name: 'Resume AI' }).click();
    await eventually(async () =>
      (await frame.getByRole('button', { name: 'Resume AI' }).count()) === 0 ? true : undefined,
    );
    await screenshot(page, 'conversations');

    // Live: a new inbound SMS appears in the open thread and the list, without a reload.
    await inboundSms(account.number, '+15125550101', 'Great, what do you need from me?');
    await thread.getByText('Great, what do you need from me?').waitFor();
    expect(await thread.locator('li').last().innerText()).toContain('Great, what do you need from me?');
    await inboundSms(account.number, '+15125550103', 'New person here');
    await list.getByText('New person here').waitFor();
    // And a handoff flag, set by the AI, shows up live as a badge.
    await system.services.commands.append({
      stream: { topic: 'account', accountId: account.id },
      context: {
        partnerId: (
          await system.services.db
            .selectFrom('accounts')
            .select('partner_id')
            .where('id', '=', account.id)
            .executeTakeFirstOrThrow()
        ).partner_id,
        actor: { kind: 'system', service: 'ai-agent' },
        correlationId: 'handoff-test-2',
      },
      events: [
        {
          type: 'conversation.handoff_requested',
          data: { phone: '+15125550103', lead_id: null, lead_name: null, reason: 'asks for a person' },
        },
      ],
    });
    await eventually(async () => ((await list.locator('.badge.handoff').count()) === 2 ? true : undefined));
    for (const message of await received(page)) expect(message.origin).toBe(dashboardOrigin);
  });

  it('shows the leads view: filters, pagination, details with the checklist, status change, and a CSV import with per-row errors', async () => {
    const account = await newAccount();
    const leads = Array.from({ length: 30 }, (_, index) => ({
      phone: `+1512555${String(1000 + index)}`,
      name: `Lead ${String(index).padStart(2, '0')}`,
      source: index % 2 === 0 ? 'website' : 'referral',
    }));
    await acme.post(`/accounts/${account.id}/leads/bulk`, { leads });
    const { body: w2 } = await acme.post(`/accounts/${account.id}/requirements`, {
      name: 'W-2',
      type: 'document',
    });
    await acme.post(`/accounts/${account.id}/requirements`, {
      name: 'Email address',
      type: 'email',
      required: false,
    });
    // The full dashboard, opened on the leads view by &view=.
    const token = await createToken(account.id);
    const { page, frame } = await openEmbedded(embedUrl(token, 'leads'));
    const table = frame.getByRole('table', { name: 'Leads' });
    await frame.getByText('1–25 of 30').waitFor();
    await frame.getByRole('button', { name: 'Next' }).click();
    await frame.getByText('26–30 of 30').waitFor();
    await frame.getByLabel('Source filter').fill('referral');
    await frame.getByText('1–15 of 15').waitFor();
    await frame.getByLabel('Search').fill('Lead 07');
    await frame.getByText('1–1 of 1').waitFor();
    await frame.getByLabel('Search').fill('');
    await frame.getByLabel('Source filter').fill('');
    await frame.getByLabel('Status filter').selectOption('qualified');
    await frame.getByText('No leads.').waitFor();
    await frame.getByLabel('Status filter').selectOption('');
    await frame.getByText('1–25 of 30').waitFor();

    await frame.getByLabel('Search').fill('Lead 00');
    await frame.getByText('1–1 of 1').waitFor();
    await table.locator('[data-phone="+15125551000"]').click();
    const details = frame.getByRole('complementary', { name: 'Lead details' });
    await details.getByText('W-2').waitFor();
    expect(await details.locator('[data-status="pending"]').count()).toBe(2);
    await details.getByLabel('Status').selectOption('qualified');
    const changed = await waitForMessage(page, 'service:lead_status_changed');
    expect(changed).toEqual({
      origin: dashboardOrigin,
      data: { type: 'service:lead_status_changed', data: { phone: '+15125551000', status: 'qualified' } },
    });
    expect((await acme.get(`/accounts/${account.id}/leads/%2B15125551000`)).body.status).toBe('qualified');

    // Live: the lead's only required item is collected (by the AI, once it exists; here written to the
    // read model directly) and the next projected batch of the account carries the change.
    const lead = await system.services.db
      .selectFrom('leads')
      .select('id')
      .where('account_id', '=', account.id)
      .where('phone', '=', '+15125551000')
      .executeTakeFirstOrThrow();
    await system.services.db
      .insertInto('lead_checklist_items')
      .values({
        lead_id: lead.id,
        requirement_id: w2.id,
        account_id: account.id,
        value: null,
        file_url: 'https://files.example/w2.pdf',
        collected_at: new Date(),
      })
      .execute();
    await acme.patch(`/accounts/${account.id}/leads/%2B15125551000`, { notes: 'Sent the W-2' });
    const completed = await waitForMessage(page, 'service:checklist_completed');
    expect(completed).toEqual({
      origin: dashboardOrigin,
      data: { type: 'service:checklist_completed', data: { phone: '+15125551000' } },
    });
    await eventually(async () =>
      (await details.locator('[data-status="completed"]').count()) === 1 ? true : undefined,
    );

    await frame.getByLabel('Import CSV').setInputFiles({
      name: 'leads.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from(
        'phone,name,email,source\n5125552001,Ana Diaz,ana@example.com,open house\nnot-a-phone,Bad Row,,\n5125552002,"Lee, Bo",,open house\n',
      ),
    });
    const result = frame.locator('.import-result');
    await result.getByText('2 imported, 0 updated, 0 unchanged, 1 refused.').waitFor();
    expect(await result.locator('tbody tr').innerText()).toMatch(/^3\s+not-a-phone\s+phone:/);
    await frame.getByLabel('Search').fill('');
    await frame.getByText('1–25 of 32').waitFor();
    expect((await acme.get(`/accounts/${account.id}/leads?source=open%20house`)).body.total).toBe(2);
    await screenshot(page, 'leads');
  });

  it('shows the settings view: the checklist requirements, managed by an admin', async () => {
    const account = await newAccount();
    await acme.post(`/accounts/${account.id}/requirements`, {
      name: 'Pay stubs',
      type: 'document',
      description: 'Last two months',
    });
    const { page, frame } = await openEmbedded(embedUrl(await createToken(account.id, { view: 'settings' })));
    const requirements = frame.getByRole('region', { name: 'Checklist requirements' });
    await requirements.getByText('Pay stubs').waitFor();
    await frame.getByLabel('Item name').fill('Photo ID');
    await frame.getByRole('button', { name: 'Add', exact: true }).click();
    await requirements.getByText('Photo ID').waitFor();
    const { body } = await acme.get(`/accounts/${account.id}/requirements`);
    expect(body.requirements.map((requirement: { name: string }) => requirement.name).sort()).toEqual([
      'Pay stubs',
      'Photo ID',
    ]);
    await screenshot(page, 'settings');
  });

  it('shows a member everything read-only: no import, lead editing, requirement, prompt or sequence changes', async () => {
    const account = await newAccount();
    await acme.post(`/accounts/${account.id}/leads`, { phone: '+15125553001', name: 'Mia' });
    await acme.post(`/accounts/${account.id}/sequences`, {
      name: 'Welcome',
      steps: [{ type: 'fixed', message: 'Welcome to {{company}}!' }],
    });
    await acme.patch(`/accounts/${account.id}/settings/prompt`, {
      mode: 'guided',
      role_persona: 'Maya from {{company}}',
    });
    const token = await createToken(account.id, { user_role: 'member', view: 'leads' });
    const { page, frame } = await openEmbedded(embedUrl(token));
    await frame.getByText('Mia').waitFor();
    expect(await frame.getByLabel('Import CSV').count()).toBe(0);
    await frame.getByRole('table', { name: 'Leads' }).locator('[data-phone="+15125553001"]').click();
    const details = frame.getByRole('complementary', { name: 'Lead details' });
    await details.getByText('Not in a sequence.').waitFor();
    expect(await details.getByLabel('Status').isEnabled()).toBe(true);
    for (const control of ['Edit', 'Delete lead', 'Enroll']) {
      expect({ control, count: await details.getByRole('button', { name: control }).count() }).toEqual({
        control,
        count: 0,
      });
    }
    await screenshot(page, 'leads-member');
    const settings = await openEmbedded(embedUrl(token, 'settings'));
    await settings.frame.getByText('No checklist items yet.').waitFor();
    expect(await settings.frame.getByLabel('Item name').count()).toBe(0);
    expect(await settings.frame.getByLabel('Role and persona').inputValue()).toBe('Maya from {{company}}');
    expect(await settings.frame.getByLabel('Role and persona').getAttribute('readonly')).not.toBeNull();
    expect(await settings.frame.getByRole('button', { name: 'Save prompt' }).count()).toBe(0);
    expect(await settings.frame.getByLabel('Upload context file').count()).toBe(0);
    expect(await settings.frame.getByLabel('Page address').count()).toBe(0);
    const sequences = await openEmbedded(embedUrl(token, 'sequences'));
    const steps = sequences.frame.getByRole('list', { name: 'Steps' });
    await steps.getByText('Welcome to {{company}}!').waitFor();
    for (const control of ['New sequence', 'Pause', 'Edit', 'Delete', 'Enroll']) {
      expect({
        control,
        count: await sequences.frame.getByRole('button', { name: control, exact: true }).count(),
      }).toEqual({ control, count: 0 });
    }
    await screenshot(sequences.page, 'sequences-member');
  });
});

describe('live delivery', () => {
  it("shows a sent message's delivery status and the lead's status change without a reload", async () => {
    const account = await newAccount();
    await acme.post(`/accounts/${account.id}/leads`, { phone: '+15125556001', name: 'Lou Park' });
    await inboundSms(account.number, '+15125556001', 'Is the rate still 6.1%?');
    const { page, frame } = await openEmbedded(
      embedUrl(await createToken(account.id, { view: 'conversations' })),
    );
    await frame.getByRole('list', { name: 'Conversations' }).locator('[data-phone="+15125556001"]').click();
    const thread = frame.getByRole('list', { name: 'Messages' });
    await thread.getByText('Is the rate still 6.1%?').waitFor();
    await frame.getByLabel('Message', { exact: true }).fill('It is, until Friday.');
    await frame.getByRole('button', { name: 'Send' }).click();
    const sent = thread.locator('li', { hasText: 'It is, until Friday.' });
    await sent.getByText('Sending').waitFor();
    // The gateway hands it to the carrier, whose reports then move it along.
    const atCarrier = await eventually(async () =>
      twilio.messages.find((message) => message.body === 'It is, until Friday.'),
    );
    await deliveryReport(atCarrier.statusCallback!, atCarrier.sid, 'sent');
    await eventually(async () =>
      (await sent.locator('.delivery').getAttribute('data-status')) === 'sent' ? true : undefined,
    );
    await deliveryReport(atCarrier.statusCallback!, atCarrier.sid, 'delivered');
    await eventually(async () =>
      (await sent.locator('.delivery').getAttribute('data-status')) === 'delivered' ? true : undefined,
    );
    expect(await sent.innerText()).toContain('Delivered');

    const header = frame.locator('.thread-header');
    expect(await header.getByLabel('Lead status').innerText()).toMatch(/contacted/i);
    await acme.patch(`/accounts/${account.id}/leads/%2B15125556001`, { status: 'qualified' });
    await eventually(async () =>
      /qualified/i.test(await header.getByLabel('Lead status').innerText()) ? true : undefined,
    );
    await screenshot(page, 'conversation-delivery');

    // A message the carrier could not deliver says so.
    await frame.getByLabel('Message', { exact: true }).fill('Are you still there?');
    await frame.getByRole('button', { name: 'Send' }).click();
    const second = await eventually(async () =>
      twilio.messages.find((message) => message.body === 'Are you still there?'),
    );
    await deliveryReport(second.statusCallback!, second.sid, 'undelivered');
    const failed = thread.locator('li', { hasText: 'Are you still there?' });
    await eventually(async () =>
      (await failed.locator('.delivery').getAttribute('data-status')) === 'undelivered' ? true : undefined,
    );
    expect(await failed.innerText()).toContain('Not delivered');
  });
});

describe('tokens in the browser', () => {
  it('warns the parent 5 minutes before expiry, adopts a refreshed token from the parent, and ignores bad ones', async () => {
    const account = await newAccount();
    const first = await createToken(account.id, { expires_in: 302 });
    const { page, frame, authorizations } = await openEmbedded(embedUrl(first));
    await frame.getByRole('tab', { name: 'Leads' }).waitFor();
    const expiring = await waitForMessage(page, 'service:token_expiring');
    expect(expiring).toEqual({ origin: dashboardOrigin, data: { type: 'service:token_expiring', data: {} } });
    // Data requests (the session checks of candidate tokens aside) carry the token in use.
    const dataTokens = () =>
      new Set(
        authorizations.filter((entry) => entry.path !== '/session').map((entry) => entry.authorization),
      );
    expect(dataTokens()).toEqual(new Set([`Bearer ${first.token}`]));

    // From the parent, but not a token that works, or one of another account: ignored.
    await page.evaluate(`window.refresh('lle_not_a_real_token', '${dashboardOrigin}')`);
    const foreignAccount = (await other.post('/accounts', { name: 'Other' })).body.id as string;
    const foreign = await other.post(`/accounts/${foreignAccount}/embed-token`, {});
    await page.evaluate(`window.refresh('${foreign.body.token}', '${dashboardOrigin}')`);
    // A valid token, but posted by the frame itself rather than its parent: ignored too.
    const sneaky = await createToken(account.id);
    await frame.evaluate(
      `window.postMessage({ type: 'service:refresh_token', token: '${sneaky.token}' }, '*')`,
    );
    await eventually(async () =>
      authorizations.filter((entry) => entry.path === '/session').length >= 3 ? true : undefined,
    );
    await frame.getByRole('tab', { name: 'Leads' }).click();
    await frame.getByText('No leads.').waitFor();
    expect(dataTokens()).toEqual(new Set([`Bearer ${first.token}`]));
    expect(authorizations.some((entry) => entry.authorization === `Bearer ${sneaky.token}`)).toBe(false);

    const second = await createToken(account.id);
    await page.evaluate(`window.refresh('${second.token}', '${dashboardOrigin}')`);
    await eventually(async () => {
      await frame.getByRole('tab', { name: 'Settings' }).click();
      await frame.getByRole('tab', { name: 'Leads' }).click();
      return dataTokens().has(`Bearer ${second.token}`) ? true : undefined;
    });
    // Revoking every token of the account ends the session in the page, with nothing of ours on it.
    await acme.delete(`/accounts/${account.id}/embed-tokens`);
    await frame.getByRole('tab', { name: 'Settings' }).click();
    await frame.getByText('This session has ended').waitFor();
    expect((await text(frame)).toLowerCase()).not.toContain('leadline');
    await screenshot(page, 'ended');
  });

  it('may be framed only by the parent origin the token names', async () => {
    const account = await newAccount();
    const token = await createToken(account.id, { parent_origin: parentOrigin });
    const context = await newBrowserContext();
    const page = await context.newPage();
    pages.push(page);
    const refused = page.waitForEvent('console', (message) => message.text().includes('frame-ancestors'));
    await page.goto(`${strangerOrigin}/?src=${encodeURIComponent(embedUrl(token))}`);
    await refused;
    expect(page.frames().some((frame) => frame.url().startsWith(dashboardOrigin))).toBe(false);
    await context.close();
    const framed = await openEmbedded(
      embedUrl(await createToken(account.id, { parent_origin: parentOrigin })),
    );
    await framed.frame.locator('.company').waitFor();
  });

  it("refuses expired, revoked and other partners' tokens on every embed route", async () => {
    const account = await newAccount();
    const foreignAccount = (await other.post('/accounts', { name: 'Elsewhere' })).body.id as string;
    const foreign = (await other.post(`/accounts/${foreignAccount}/embed-token`, {})).body.token as string;
    const revoked = (await createToken(account.id)).token;
    await acme.delete(`/accounts/${account.id}/embed-tokens`);
    const routes = [
      'leads',
      'leads/%2B15125550101',
      'leads/%2B15125550101/checklist',
      'conversations',
      'conversations/%2B15125550101/messages',
      'requirements',
      'sequences',
      'settings/prompt',
      'context/files',
      'context/urls',
      'events',
    ];
    for (const route of routes) {
      const call = (token: string) =>
        fetch(`${dashboardOrigin}/embed/api/accounts/${account.id}/${route}`, {
          headers: { authorization: `Bearer ${token}` },
        });
      expect({ route, status: (await call(foreign)).status }).toEqual({ route, status: 404 });
      expect({ route, status: (await call(revoked)).status }).toEqual({ route, status: 401 });
    }
  });
});
