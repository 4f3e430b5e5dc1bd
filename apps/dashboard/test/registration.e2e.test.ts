import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDb, createSecretBox, DEVELOPMENT_WEBHOOK_KEY, type Database } from '@leadline/runtime';
import { createLocalCarrierRegistration } from '@leadline/telephony';
import { eventually, fakeClock } from '@leadline/test-kit';
import type { Kysely } from 'kysely';
import { chromium, type Browser, type BrowserContext, type Frame, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  startRegistrationWorker,
  type RunningRegistrationWorker,
} from '../../../services/carrier-registration/src';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

// scripts/test.sh installs Debian's chromium when it is missing.
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Screenshots to look at, outside the checkout. */
const SCREENSHOTS = process.env.SCREENSHOT_DIR ?? join(tmpdir(), 'leadline-dashboard-screenshots');
const REVIEW_MS = 5 * 60_000;
const CHECK_MS = 60_000;

const clock = fakeClock(new Date('2026-03-02T15:00:00Z'));
let system: TestSystem;
let acme: PartnerClient;
let workerDb: Kysely<Database>;
let local: ReturnType<typeof createLocalCarrierRegistration>;
let worker: RunningRegistrationWorker;
let browser: Browser;
let context: BrowserContext | undefined;
let parent: Server;
let parentOrigin: string;
let dashboardOrigin: string;

beforeAll(async () => {
  system = await startSystem({ clock });
  dashboardOrigin = await system.app.listen({ port: 0, host: '127.0.0.1' });
  acme = partnerClient(system.app, await system.createPartner('Acme CRM'));
  const url = system.env.config.DATABASE_URL;
  workerDb = createDb(url, { maxConnections: 4 });
  local = createLocalCarrierRegistration({ databaseUrl: url, clock, decisionDelayMs: REVIEW_MS });
  worker = startRegistrationWorker({
    db: workerDb,
    commands: system.services.commands,
    carrier: local,
    secrets: createSecretBox(DEVELOPMENT_WEBHOOK_KEY),
    clock,
    random: () => 0,
    checkSchedule: { minMs: CHECK_MS, maxMs: CHECK_MS },
    retrySchedule: { baseMs: CHECK_MS, maxMs: CHECK_MS },
    callTimeoutMs: 10_000,
    pollIntervalMs: 50,
  });
  // The partner's page, on another origin, framing the dashboard.
  parent = createServer((request, response) => {
    const src = new URL(request.url ?? '/', 'http://localhost').searchParams.get('src') ?? '';
    response.setHeader('content-type', 'text/html; charset=utf-8');
    response.end(
      `<!doctype html><html><body style="margin:0"><iframe src="${src.replaceAll('"', '&quot;')}" style="width:100%;height:1100px;border:0"></iframe></body></html>`,
    );
  });
  await new Promise<void>((resolve) => parent.listen(0, 'localhost', resolve));
  parentOrigin = `http://localhost:${(parent.address() as AddressInfo).port}`;
  mkdirSync(SCREENSHOTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
});
afterEach(async () => {
  await context?.close();
  context = undefined;
});
afterAll(async () => {
  await browser?.close();
  parent?.close();
  await worker?.stop();
  await local?.close();
  await workerDb?.destroy();
  await system?.close();
});

async function openSettings(
  accountId: string,
  role: 'admin' | 'member',
): Promise<{ page: Page; frame: Frame }> {
  const { body } = await acme.post(`/accounts/${accountId}/embed-token`, {
    user_name: 'Dana Broker',
    user_role: role,
    view: 'settings',
  });
  const embed = new URL(body.embed_url);
  const src = `${dashboardOrigin}${embed.pathname}${embed.search}`;
  context ??= await browser.newContext({ viewport: { width: 1100, height: 1100 } });
  const page = await context.newPage();
  page.on('pageerror', (error) => console.warn('page error:', error.stack));
  await page.goto(`${parentOrigin}/?src=${encodeURIComponent(src)}`);
  const frame = await eventually(async () =>
    page.frames().find((candidate) => candidate.url().startsWith(dashboardOrigin)),
  );
  await frame.getByRole('region', { name: 'Texting registration' }).waitFor();
  return { page, frame };
}

/** Moves the carriers' clock on, look by look, until the registration settles (approved or failed). */
async function untilSettled(accountId: string) {
  for (let looks = 0; looks < 40; looks++) {
    await eventually(async () => {
      const busy = await system.services.db
        .selectFrom('carrier_registration_work')
        .select('account_id')
        .where('account_id', '=', accountId)
        .where((eb) => eb.or([eb('due_at', '<=', clock.now()), eb('lease_until', 'is not', null)]))
        .executeTakeFirst();
      return busy ? undefined : true;
    });
    const { body } = await acme.get(`/accounts/${accountId}/compliance/registration`);
    if (body.status === 'approved' || body.status === 'failed') return body;
    clock.advance(CHECK_MS);
  }
  throw new Error('the registration never settled');
}

const step = (frame: Frame, name: string) => frame.getByRole('listitem', { name, exact: true });

describe('the texting registration in the settings view', () => {
  it('lets an admin submit the business profile, then shows each step and the reason of a rejection, white-labeled', async () => {
    const account = (
      await acme.post('/accounts', { name: 'Sunrise Mortgage', company_name: 'Sunrise Home Loans' })
    ).body.id as string;
    const { page, frame } = await openSettings(account, 'admin');
    for (const name of ['Business profile', 'Brand', 'Campaign', 'Phone number'])
      await step(frame, name).getByText('Not submitted').waitFor();

    await frame.getByRole('button', { name: 'Submit business profile' }).click();
    const fill = (label: string, value: string) => frame.getByLabel(label, { exact: true }).fill(value);
    await fill('Legal business name', 'Sunrise Lending FAIL');
    await fill('EIN', '27-1048576');
    await frame.getByLabel('Industry', { exact: true }).selectOption('financial');
    await fill('Website', 'https://sunrisehomeloans.example');
    await fill('Street address', '100 Congress Ave');
    await fill('City', 'Austin');
    await fill('State', 'TX');
    await fill('ZIP code', '78701');
    await fill('First name', 'Dana');
    await fill('Last name', 'Reyes');
    await fill('Title', 'Compliance officer');
    await fill('Email', 'dana@sunrisehomeloans.example');
    await fill('Phone', '512-555-0100');
    await fill(
      'What your messages are for',
      'Follow-up with mortgage applicants about their loan application.',
    );
    await fill(
      'Sample message 1',
      'Hi Ana, Sunrise Home Loans here: could you send your W-2? Reply STOP to opt out.',
    );
    await fill(
      'Sample message 2',
      'Sunrise Home Loans: your pre-approval letter is ready. Reply HELP for help.',
    );
    await fill(
      'How leads agree to receive messages',
      'Applicants tick an SMS consent box on our loan application form.',
    );
    await frame.getByRole('button', { name: 'Submit for review' }).click();

    await step(frame, 'Business profile').getByText('In review').waitFor();
    const submitted = (await acme.get(`/accounts/${account}/compliance/registration`)).body;
    expect(submitted.profile).toMatchObject({ legal_name: 'Sunrise Lending FAIL', tax_id: 'XX-XXX8576' });

    const settled = await untilSettled(account);
    expect(settled.status).toBe('failed');
    await page.reload();
    const reloaded = await eventually(async () =>
      page.frames().find((candidate) => candidate.url().startsWith(dashboardOrigin)),
    );
    await step(reloaded, 'Brand').getByText('Rejected').waitFor();
    await step(reloaded, 'Business profile').getByText('Approved').waitFor();
    await step(reloaded, 'Campaign').getByText('Not submitted').waitFor();
    expect(await step(reloaded, 'Brand').getByRole('note').textContent()).toMatch(
      /do not match .*\(simulated\)/,
    );
    // The form is back to correct it: prefilled, but the EIN is typed again.
    await reloaded.getByRole('button', { name: 'Correct and resubmit' }).click();
    expect(await reloaded.getByLabel('Legal business name', { exact: true }).inputValue()).toBe(
      'Sunrise Lending FAIL',
    );
    expect(await reloaded.getByLabel('EIN', { exact: true }).inputValue()).toBe('');
    const region = reloaded.getByRole('region', { name: 'Texting registration' });
    expect(await region.textContent()).toContain('XX-XXX8576');
    expect(await region.textContent()).not.toContain('1048576');
    // White-labeled: neither our name nor the provider's anywhere in the frame.
    expect(await reloaded.locator('body').textContent()).not.toMatch(/leadline|twilio/i);
    await region.screenshot({ path: join(SCREENSHOTS, 'registration-admin.png') });

    const member = await openSettings(account, 'member');
    await step(member.frame, 'Brand').getByText('Rejected').waitFor();
    await member.frame.getByText('An administrator of this account submits the business profile.').waitFor();
    expect(await member.frame.getByRole('button', { name: 'Submit for review' }).count()).toBe(0);
    expect(await member.frame.getByRole('button', { name: 'Correct and resubmit' }).count()).toBe(0);
    expect(await member.frame.getByLabel('EIN', { exact: true }).count()).toBe(0);
    await member.page.bringToFront();
    await member.frame
      .getByRole('region', { name: 'Texting registration' })
      .screenshot({ path: join(SCREENSHOTS, 'registration-member.png') });
  });
});
