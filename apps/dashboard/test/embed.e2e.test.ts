import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { eventually, startFakeTwilio, twilioSignature, type FakeTwilio } from '@leadline/test-kit';
import { chromium, type Browser, type BrowserContext, type Frame, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

// scripts/test.sh installs Debian's chromium when it is missing.
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SCREENSHOTS = fileURLToPath(new URL('../../../test-output/dashboard/', import.meta.url));

interface Received {
  origin: string;
  data: { type: string; data: Record<string, unknown> };
}

let system: TestSystem;
let twilio: FakeTwilio;
let acme: PartnerClient;
let other: PartnerClient;
let browser: Browser;
let context: BrowserContext;
let dashboardOrigin: string;
let parent: Server;
let parentOrigin: string;
let stranger: Server;
let strangerOrigin: string;

/** The partner's page: on another origin (localhost, where the dashboard is on 127.0.0.1). */
function parentPage(): Server {
  return createServer((request, response) => {
    if (request.url === '/logo.svg') {
      response.setHeader('content-type', 'image/svg+xml');
      return response.end(
        '<svg xmlns="http://www.w3.org/2000/svg" width="96" height="32"><circle cx="16" cy="16" r="14" fill="#0F766E"/><text x="36" y="22" font-family="sans-serif" font-size="14" fill="#0F766E">SHL</text></svg>',
      );
    }
    if (request.url === '/faq') {
      response.setHeader('content-type', 'text/html; charset=utf-8');
      return response.end(
        '<!doctype html><html><head><title>Rates and FAQ</title></head><body><main><h1>FAQ</h1><p>We lend in Texas and Oklahoma. Our rates are updated every morning.</p></main></body></html>',
      );
    }
    const src = new URL(request.url ?? '/', 'http://localhost').searchParams.get('src') ?? '';
    response.setHeader('content-type', 'text/html; charset=utf-8');
    response.end(`<!doctype html><html><head><title>Partner CRM</title></head><body style="margin:0">
<iframe id="dashboard" src="${src.replaceAll('"', '&quot;')}" style="width:100%;min-height:500px;height:640px;border:0" allow="clipboard-write"></iframe>
<script>
  window.received = [];
  window.addEventListener('message', (event) => window.received.push({ origin: event.origin, data: event.data }));
  window.refresh = (token, origin) =>
    document.getElementById('dashboard').contentWindow.postMessage({ type: 'service:refresh_token', token }, origin);
</script></body></html>`);
  });
}

async function listen(server: Server) {
  await new Promise<void>((resolve) => server.listen(0, 'localhost', resolve));
  return `http://localhost:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  twilio = await startFakeTwilio();
  system = await startSystem({ twilio, gateway: true });
  dashboardOrigin = await system.app.listen({ port: 0, host: '127.0.0.1' });
  acme = partnerClient(system.app, await system.createPartner('Acme CRM'));
  other = partnerClient(system.app, await system.createPartner('Other CRM'));
  parent = parentPage();
  parentOrigin = await listen(parent);
  stranger = parentPage();
  strangerOrigin = await listen(stranger);
  mkdirSync(SCREENSHOTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
});
afterAll(async () => {
  await browser?.close();
  parent?.close();
  stranger?.close();
  await system?.close();
  await twilio?.close();
});

let pages: Page[] = [];
afterEach(async () => {
  await Promise.all(pages.map((page) => page.close()));
  await context?.close();
  pages = [];
});

async function newAccount(fields: Record<string, unknown> = {}) {
  const { body } = await acme.post('/accounts', {
    name: 'Sunrise Mortgage',
    company_name: 'Sunrise Home Loans',
    branding: { logo_url: `${parentOrigin}/logo.svg`, accent_color: '#0F766E' },
    consent_required: false,
    ...fields,
  });
  return { id: body.id as string, number: body.phone_number as string };
}

async function createToken(accountId: string, body: Record<string, unknown> = {}) {
  const { status, body: answer } = await acme.post(`/accounts/${accountId}/embed-token`, {
    user_name: 'Dana Broker',
    ...body,
  });
  expect(status).toBe(200);
  return answer as { token: string; expires_at: string; embed_url: string };
}

/** The embed URL as the partner got it, on the port the test API listens on. */
const embedUrl = (token: { embed_url: string }, view?: string) => {
  const url = new URL(token.embed_url);
  const local = new URL(`${dashboardOrigin}${url.pathname}${url.search}`);
  if (view) local.searchParams.set('view', view);
  return local.toString();
};

/** Opens the partner's page with the dashboard in its iframe; records every request the frame makes. */
async function openEmbedded(src: string, origin = parentOrigin) {
  context = await browser.newContext({ viewport: { width: 1100, height: 700 } });
  const page = await context.newPage();
  pages.push(page);
  const authorizations: { path: string; authorization: string }[] = [];
  const thirdParty: string[] = [];
  page.on('pageerror', (error) => console.warn('page error:', error.stack));
  page.on('console', (message) => {
    if (message.type() === 'error') console.warn('console:', message.text());
  });
  page.on('request', (request) => {
    const url = request.url();
    if (url.startsWith(`${dashboardOrigin}/embed/api`)) {
      authorizations.push({
        path: url.slice(`${dashboardOrigin}/embed/api`.length),
        authorization: request.headers()['authorization'] ?? '',
      });
    } else if (!url.startsWith(dashboardOrigin) && !url.startsWith(origin) && !url.startsWith('data:')) {
      thirdParty.push(url);
    }
  });
  await page.goto(`${origin}/?src=${encodeURIComponent(src)}`);
  const frame = await eventually(async () =>
    page.frames().find((candidate) => candidate.url().startsWith(dashboardOrigin)),
  );
  return { page, frame, authorizations, thirdParty };
}

const received = (page: Page) =>
  page.evaluate(() => (window as unknown as { received: Received[] }).received);
const waitForMessage = (page: Page, type: string) =>
  eventually(async () => (await received(page)).find((message) => message.data?.type === type), {
    message: `no ${type} message`,
  });

const screenshot = (page: Page, name: string) =>
  page.screenshot({ path: `${SCREENSHOTS}${name}.png`, fullPage: true });

let sids = 0;
async function inboundSms(to: string, from: string, body: string) {
  const params = {
    MessageSid: `SM${String(++sids).padStart(32, '0')}`,
    AccountSid: twilio.accountSid,
    From: from,
    To: to,
    Body: body,
    NumMedia: '0',
  };
  const response = await system.app.inject({
    method: 'POST',
    url: '/twilio/sms',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': twilioSignature(twilio.authToken, `${system.publicUrl}/twilio/sms`, params),
    },
    payload: new URLSearchParams(params).toString(),
  });
  expect(response.statusCode).toBe(200);
}

/** The carrier's signed status callback for a message it was given. */
async function deliveryReport(statusCallback: string, sid: string, status: string) {
  const params = { MessageSid: sid, MessageStatus: status, AccountSid: twilio.accountSid };
  const url = new URL(statusCallback);
  const response = await system.app.inject({
    method: 'POST',
    url: `${url.pathname}${url.search}`,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': twilioSignature(twilio.authToken, statusCallback, params),
    },
    payload: new URLSearchParams(params).toString(),
  });
  expect(response.statusCode).toBe(200);
}

const text = (frame: Frame) => frame.locator('body').innerText();

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

  it('builds a sequence of fixed and AI steps, lists it with its steps, pauses it, and enrolls and unenrolls a lead from the lead view', async () => {
    const account = await newAccount();
    await acme.post(`/accounts/${account.id}/leads`, { phone: '+15125554001', name: 'Rosa Diaz' });
    await acme.post(`/accounts/${account.id}/leads`, { phone: '+15125554002', name: 'Ira Moss' });
    const { page, frame } = await openEmbedded(embedUrl(await createToken(account.id)));
    await frame.getByRole('tab', { name: 'Sequences' }).click();
    await frame.getByText('No sequences yet.').waitFor();
    await frame.getByRole('button', { name: 'New sequence' }).click();
    await frame.getByLabel('Sequence name').fill('New lead follow-up');
    await frame.getByLabel('Sequence description').fill('For leads from the website');
    // A misspelt variable is refused, saying where.
    await frame.getByLabel('Step 1 message').fill('Hi {{frist_name}}!');
    await frame.getByRole('button', { name: 'Create sequence' }).click();
    await frame
      .getByRole('alert')
      .getByText(/steps 1 message: Unknown template variable/)
      .waitFor();
    expect((await acme.get(`/accounts/${account.id}/sequences`)).body.total).toBe(0);
    await frame
      .getByLabel('Step 1 message')
      .fill('Hi {{first_name}}, thanks for reaching out to {{company}}!');
    await frame.getByRole('button', { name: 'Add step' }).click();
    await frame.getByLabel('Step 2 type').selectOption('ai');
    await frame.getByLabel('Step 2 delay in hours').fill('24');
    await frame.getByLabel('Step 2 instructions').fill('Ask whether they have found a home yet.');
    await frame.getByLabel('Step 2 skip if replied').uncheck();
    await screenshot(page, 'sequence-builder');
    await frame.getByRole('button', { name: 'Create sequence' }).click();

    const list = frame.getByRole('list', { name: 'Sequences' });
    await list.getByText('New lead follow-up').waitFor();
    await list.getByText('2 steps · 0 enrolled').waitFor();
    const steps = frame.getByRole('list', { name: 'Steps' });
    await steps.getByText('Ask whether they have found a home yet.').waitFor();
    expect(await steps.locator('li').count()).toBe(2);
    expect(await steps.locator('li').nth(0).innerText()).toMatch(
      /Fixed[\s\S]*At once[\s\S]*skipped if they replied/,
    );
    expect(await steps.locator('li').nth(1).innerText()).toContain('1 day after the previous step');
    expect(await steps.locator('li').nth(1).innerText()).not.toContain('skipped if they replied');
    const { body: stored } = await acme.get(`/accounts/${account.id}/sequences`);
    expect(stored.sequences).toMatchObject([
      {
        name: 'New lead follow-up',
        description: 'For leads from the website',
        is_active: true,
        is_default: false,
        steps: [
          {
            order: 0,
            type: 'fixed',
            message: 'Hi {{first_name}}, thanks for reaching out to {{company}}!',
            delay_hours: 0,
            skip_if_replied: true,
          },
          {
            order: 1,
            type: 'ai',
            instructions: 'Ask whether they have found a home yet.',
            delay_hours: 24,
            skip_if_replied: false,
          },
        ],
      },
    ]);
    const sequenceId = stored.sequences[0].id as string;
    const current = async () => (await acme.get(`/accounts/${account.id}/sequences/${sequenceId}`)).body;

    await frame.getByRole('button', { name: 'Pause' }).click();
    await frame.getByRole('button', { name: 'Activate' }).waitFor();
    expect((await current()).is_active).toBe(false);
    await frame.getByRole('button', { name: 'Activate' }).click();
    await frame.getByRole('button', { name: 'Pause' }).waitFor();
    await frame.getByRole('button', { name: 'Make default' }).click();
    await list.getByText('Default').waitFor();
    expect(await current()).toMatchObject({ is_active: true, is_default: true });

    // Editing: a third step, then saved; the list and the stored sequence follow.
    await frame.getByRole('button', { name: 'Edit', exact: true }).click();
    await frame.getByRole('button', { name: 'Add step' }).click();
    await frame.getByLabel('Step 3 delay in hours').fill('72');
    await frame.getByLabel('Step 3 message').fill('Still there, {{first_name}}?');
    await frame.getByRole('button', { name: 'Save' }).click();
    await steps.getByText('Still there, {{first_name}}?').waitFor();
    await list.getByText('3 steps · 0 enrolled').waitFor();
    expect((await current()).steps).toHaveLength(3);
    await screenshot(page, 'sequences');

    // Enrolling from the lead view.
    await frame.getByRole('tab', { name: 'Leads' }).click();
    await frame.getByRole('table', { name: 'Leads' }).locator('[data-phone="+15125554001"]').click();
    const details = frame.getByRole('complementary', { name: 'Lead details' });
    await details.getByText('Not in a sequence.').waitFor();
    await details.getByLabel('Sequence to enroll in').selectOption({ label: 'New lead follow-up' });
    await details.getByRole('button', { name: 'Enroll' }).click();
    await details
      .getByRole('status')
      .getByText(/^Enrolled/)
      .waitFor();
    const enrollment = details.getByRole('region', { name: 'Sequences' });
    await enrollment.locator('.enrollment').getByText('New lead follow-up').waitFor();
    expect(await enrollment.locator('.enrollment').getAttribute('data-status')).toBe('active');
    expect(await enrollment.innerText()).toMatch(/of 3 steps done/);
    const { body: lead } = await acme.get(`/accounts/${account.id}/leads/%2B15125554001`);
    expect(lead.sequence).toMatchObject({ name: 'New lead follow-up', status: 'active', total_steps: 3 });
    await screenshot(page, 'lead-sequence');

    // And out of it again.
    await enrollment.getByRole('button', { name: 'Remove from sequence' }).click();
    await details.getByRole('status').getByText('Removed from the sequence.').waitFor();
    await eventually(async () =>
      (await enrollment.locator('.enrollment').getAttribute('data-status')) === 'cancelled'
        ? true
        : undefined,
    );
    expect(await enrollment.innerText()).toContain('Cancelled');
    expect(await enrollment.getByRole('button', { name: 'Remove from sequence' }).count()).toBe(0);
    const { body: after } = await acme.get(`/accounts/${account.id}/leads/%2B15125554001`);
    expect(after.sequence).toMatchObject({
      name: 'New lead follow-up',
      status: 'cancelled',
      next_step_at: null,
    });
    // Enrolled again by the partner's own system: the open details follow, live.
    await acme.post(`/accounts/${account.id}/sequences/${sequenceId}/enroll`, { phone: '+15125554001' });
    await eventually(async () =>
      (await enrollment.locator('.enrollment').getAttribute('data-status')) === 'active' ? true : undefined,
    );
    await frame.getByRole('tab', { name: 'Sequences' }).click();
    await list.getByText('3 steps · 2 enrolled').waitFor();
    // Enrolling by phone from the sequence itself, as people type numbers.
    await frame.getByLabel('Lead phone').fill('(512) 555-4002');
    await frame.getByRole('button', { name: 'Enroll', exact: true }).click();
    await frame
      .getByRole('status')
      .getByText(/^Enrolled/)
      .waitFor();
    await list.getByText('3 steps · 3 enrolled').waitFor();
    expect((await acme.get(`/accounts/${account.id}/leads/%2B15125554002`)).body.sequence).toMatchObject({
      name: 'New lead follow-up',
      status: 'active',
    });
    // At a phone's width the list sits above the sequence.
    await page.setViewportSize({ width: 480, height: 800 });
    await screenshot(page, 'sequences-narrow');

    // Deleting it stops it for the enrolled lead.
    await frame.getByRole('button', { name: 'Delete', exact: true }).click();
    await frame.getByRole('button', { name: 'Delete for good' }).click();
    await frame.getByText('No sequences yet.').waitFor();
    expect((await acme.get(`/accounts/${account.id}/sequences/${sequenceId}`)).status).toBe(404);
    expect((await acme.get(`/accounts/${account.id}/leads/%2B15125554001`)).body.sequence.status).toBe(
      'cancelled',
    );
  });

  it('edits and deletes a lead from its details', async () => {
    const account = await newAccount();
    await acme.post(`/accounts/${account.id}/leads`, {
      phone: '+15125555001',
      name: 'Sam Ortiz',
      email: 'sam@example.com',
    });
    await acme.post(`/accounts/${account.id}/leads`, { phone: '+15125555002', name: 'Kim Lee' });
    await inboundSms(account.number, '+15125555001', 'Hello there');
    const { page, frame } = await openEmbedded(embedUrl(await createToken(account.id, { view: 'leads' })));
    const table = frame.getByRole('table', { name: 'Leads' });
    await table.locator('[data-phone="+15125555001"]').click();
    const details = frame.getByRole('complementary', { name: 'Lead details' });
    await details.getByText('sam@example.com').waitFor();
    await details.getByRole('button', { name: 'Edit' }).click();
    const editor = details.getByRole('form', { name: 'Edit lead' });
    await editor.getByLabel('Name').fill('Samuel Ortiz');
    await editor.getByLabel('Email').fill('');
    await editor.getByLabel('Company').fill('Ortiz Builders');
    await editor.getByLabel('Notes').fill('Prefers texts after 5 pm');
    await editor.getByRole('button', { name: 'Save' }).click();
    await details.getByText('Ortiz Builders').waitFor();
    await details.getByText('Prefers texts after 5 pm').waitFor();
    await table.getByText('Samuel Ortiz').waitFor();
    expect(await details.getByText('sam@example.com').count()).toBe(0);
    const { body: edited } = await acme.get(`/accounts/${account.id}/leads/%2B15125555001`);
    expect(edited).toMatchObject({
      name: 'Samuel Ortiz',
      email: null,
      company: 'Ortiz Builders',
      notes: 'Prefers texts after 5 pm',
    });
    await screenshot(page, 'lead-edit');

    await details.getByRole('button', { name: 'Delete lead' }).click();
    await details.getByRole('button', { name: 'Delete for good' }).click();
    await eventually(async () =>
      (await table.locator('[data-phone="+15125555001"]').count()) === 0 ? true : undefined,
    );
    expect(await frame.getByRole('complementary', { name: 'Lead details' }).count()).toBe(0);
    await frame.getByText('1–1 of 1').waitFor();
    expect((await acme.get(`/accounts/${account.id}/leads/%2B15125555001`)).status).toBe(404);
    // The conversation stays.
    const { body: messages } = await acme.get(
      `/accounts/${account.id}/conversations/%2B15125555001/messages`,
    );
    expect(messages.messages.map((message: { body: string }) => message.body)).toEqual(['Hello there']);
  });

  it('edits the AI prompt, guided and advanced, and the company context files and pages', async () => {
    const account = await newAccount();
    const { page, frame } = await openEmbedded(embedUrl(await createToken(account.id, { view: 'settings' })));
    const prompt = frame.getByRole('region', { name: 'AI prompt' });
    await prompt.getByLabel('Role and persona').fill('Maya, the loan assistant of {{company}}');
    await prompt.getByLabel('Tone and voice').fill('Warm and plain-spoken');
    await prompt.getByRole('button', { name: 'Save prompt' }).click();
    await prompt.getByRole('status').getByText('Saved').waitFor();
    const saved = async () => (await acme.get(`/accounts/${account.id}/settings/prompt`)).body;
    expect(await saved()).toMatchObject({
      mode: 'guided',
      role_persona: 'Maya, the loan assistant of {{company}}',
      tone_voice: 'Warm and plain-spoken',
      response_style: null,
    });
    await screenshot(page, 'settings-ai');
    // The page's shot starts where the frame is scrolled to; the prompt's own shows all of it.
    await prompt.screenshot({ path: `${SCREENSHOTS}settings-ai-prompt.png` });
    await prompt.getByText('Prompt as the assistant sees it').click();
    expect(await prompt.getByLabel('Composed prompt').innerText()).toContain(
      'Maya, the loan assistant of Sunrise Home Loans',
    );

    const context = frame.getByRole('region', { name: 'Company context' });
    await context.getByLabel('Upload context file').setInputFiles({
      name: 'faq.md',
      mimeType: 'text/markdown',
      buffer: Buffer.from('# FAQ\n\nWe close most loans in 21 days.\n'),
    });
    await context.getByRole('list', { name: 'Context files' }).getByText('faq.md').waitFor();
    // The prompt as the model sees it now carries the file, without a reload.
    await prompt.getByLabel('Composed prompt').getByText('We close most loans in 21 days.').waitFor();
    await context.getByLabel('Page address').fill(`${parentOrigin}/faq`);
    await context.getByRole('button', { name: 'Add page' }).click();
    await context.getByRole('list', { name: 'Context pages' }).getByText('Rates and FAQ').waitFor();
    expect((await acme.get(`/accounts/${account.id}/context/files`)).body.files).toMatchObject([
      { name: 'faq.md', file_type: 'md' },
    ]);
    expect((await acme.get(`/accounts/${account.id}/context/urls`)).body.urls).toMatchObject([
      { url: `${parentOrigin}/faq`, title: 'Rates and FAQ' },
    ]);
    await screenshot(page, 'settings-context');

    await prompt.getByText('Advanced').click();
    await prompt.getByLabel('System prompt').fill('You are the assistant of {{company}}. Be brief.');
    await prompt.getByRole('button', { name: 'Save prompt' }).click();
    await prompt.getByRole('status').getByText('Saved').waitFor();
    expect(await saved()).toMatchObject({
      mode: 'advanced',
      system_prompt: 'You are the assistant of {{company}}. Be brief.',
    });
    expect(await prompt.getByLabel('Composed prompt').innerText()).toContain(
      'You are the assistant of Sunrise Home Loans. Be brief.',
    );
    await context.getByRole('button', { name: 'Remove faq.md' }).click();
    await context.getByText('No files yet.').waitFor();
    await eventually(async () =>
      (await prompt.getByLabel('Composed prompt').innerText()).includes('21 days') ? undefined : true,
    );
    expect((await acme.get(`/accounts/${account.id}/context/files`)).body.files).toEqual([]);
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
    context = await browser.newContext();
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
