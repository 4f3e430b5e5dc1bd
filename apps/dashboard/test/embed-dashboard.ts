import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { eventually, startFakeTwilio, twilioSignature, type FakeTwilio } from '@leadline/test-kit';
import { chromium, type Browser, type BrowserContext, type Frame, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

// What the embedded dashboard's browser tests share: the system, Chromium, the parent pages, and helpers to open the dashboard and drive it.

// scripts/test.sh installs Debian's chromium when it is missing.
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const SCREENSHOTS = fileURLToPath(new URL('../../../test-output/dashboard/', import.meta.url));

interface Received {
  origin: string;
  data: { type: string; data: Record<string, unknown> };
}

export let system: TestSystem;
export let twilio: FakeTwilio;
export let acme: PartnerClient;
export let other: PartnerClient;
export let browser: Browser;
export let context: BrowserContext;
export let dashboardOrigin: string;
export let parent: Server;
export let parentOrigin: string;
export let stranger: Server;
export let strangerOrigin: string;

/** The partner's page: on another origin (localhost, where the dashboard is on 127.0.0.1). */
export function parentPage(): Server {
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

export async function listen(server: Server) {
  await new Promise<void>((resolve) => server.listen(0, 'localhost', resolve));
  return `http://localhost:${(server.address() as AddressInfo).port}`;
}

/**
 * The whole product with the fake Twilio and the SMS gateway, the dashboard served by the app, two
 * partners, a parent page and a stranger's page that frame it, and Chromium; each test's pages and
 * browser context are closed after it.
 */
export function useEmbeddedDashboard() {
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

  afterEach(async () => {
    await Promise.all(pages.map((page) => page.close()));
    await context?.close();
    pages = [];
  });
}

export let pages: Page[] = [];

/** A browser context for a test that opens a page itself; closed after the test like the others. */
export async function newBrowserContext() {
  context = await browser.newContext();
  return context;
}

export async function newAccount(fields: Record<string, unknown> = {}) {
  const { body } = await acme.post('/accounts', {
    name: 'Sunrise Mortgage',
    company_name: 'Sunrise Home Loans',
    branding: { logo_url: `${parentOrigin}/logo.svg`, accent_color: '#0F766E' },
    consent_required: false,
    ...fields,
  });
  return { id: body.id as string, number: body.phone_number as string };
}

export async function createToken(accountId: string, body: Record<string, unknown> = {}) {
  const { status, body: answer } = await acme.post(`/accounts/${accountId}/embed-token`, {
    user_name: 'Dana Broker',
    ...body,
  });
  expect(status).toBe(200);
  return answer as { token: string; expires_at: string; embed_url: string };
}

/** The embed URL as the partner got it, on the port the test API listens on. */
export const embedUrl = (token: { embed_url: string }, view?: string) => {
  const url = new URL(token.embed_url);
  const local = new URL(`${dashboardOrigin}${url.pathname}${url.search}`);
  if (view) local.searchParams.set('view', view);
  return local.toString();
};

/** Opens the partner's page with the dashboard in its iframe; records every request the frame makes. */
export async function openEmbedded(src: string, origin = parentOrigin) {
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

export const received = (page: Page) =>
  page.evaluate(() => (window as unknown as { received: Received[] }).received);
export const waitForMessage = (page: Page, type: string) =>
  eventually(async () => (await received(page)).find((message) => message.data?.type === type), {
    message: `no ${type} message`,
  });

export const screenshot = (page: Page, name: string) =>
  page.screenshot({ path: `${SCREENSHOTS}${name}.png`, fullPage: true });

let sids = 0;
export async function inboundSms(to: string, from: string, body: string) {
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
export async function deliveryReport(statusCallback: string, sid: string, status: string) {
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

export const text = (frame: Frame) => frame.locator('body').innerText();
