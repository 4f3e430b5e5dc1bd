import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { chromium, type Page } from 'playwright-core';
import { percentile } from './stats';
import { expectStatus, startBenchSystem } from './system';

const CONVERSATIONS = 200;
const RUNS = 15;
const ASSETS = fileURLToPath(new URL('../apps/dashboard/dist/assets/', import.meta.url));

/** Gzipped bytes of the built app's JS and CSS, as a browser downloads them. */
function bundleSizes() {
  const sizes = { js: 0, css: 0 };
  for (const name of readdirSync(ASSETS)) {
    const gzipped = gzipSync(readFileSync(`${ASSETS}${name}`), { level: 9 }).length;
    if (name.endsWith('.js')) sizes.js += gzipped;
    if (name.endsWith('.css')) sizes.css += gzipped;
  }
  return sizes;
}

/** Milliseconds from setting the iframe's src to `ready` resolving, on a fresh page each run. */
async function timeFrame(
  newPage: () => Promise<Page>,
  parentUrl: string,
  src: () => Promise<string>,
  ready: (page: Page) => Promise<unknown>,
) {
  const samples: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const url = await src();
    const page = await newPage();
    await page.goto(parentUrl);
    const started = performance.now();
    await page.evaluate(`document.getElementById('frame').src = ${JSON.stringify(url)}`);
    await ready(page);
    samples.push(performance.now() - started);
    await page.close();
  }
  return samples;
}

/**
 * The dashboard's weight and the time from iframe load to a conversations list of 200 rendered,
 * beside a blank page framed the same way in the same browser and run.
 */
export async function benchEmbed(): Promise<string> {
  const sizes = bundleSizes();
  const system = await startBenchSystem();
  const parent = createServer((request, response) => {
    response.setHeader('content-type', 'text/html');
    response.end(
      request.url === '/blank'
        ? '<!doctype html><title></title>'
        : '<!doctype html><iframe id="frame" style="width:100%;min-height:500px;height:700px;border:0"></iframe>',
    );
  });
  await new Promise<void>((resolve) => parent.listen(0, 'localhost', resolve));
  const parentUrl = `http://localhost:${(parent.address() as AddressInfo).port}/`;
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
  try {
    const { headers, baseUrl } = system;
    const account = (await expectStatus(
      await fetch(`${baseUrl}/v1/accounts`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ name: 'Bench Mortgage' }),
      }),
      201,
    )) as { id: string; phone_number: string };
    for (let i = 0; i < CONVERSATIONS; i++) {
      const form = new URLSearchParams({
        MessageSid: `SM${String(i).padStart(32, '0')}`,
        From: `+1512555${String(1000 + i)}`,
        To: account.phone_number,
        Body: `Hello, this is lead ${i}`,
        NumMedia: '0',
      });
      const answer = await fetch(`${baseUrl}/twilio/sms`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: form.toString(),
      });
      if (answer.status !== 200) throw new Error(`inbound SMS answered ${answer.status}`);
    }
    const context = await browser.newContext();
    const newPage = () => context.newPage();
    const token = async () => {
      const body = (await expectStatus(
        await fetch(`${baseUrl}/v1/accounts/${account.id}/embed-token`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ view: 'conversations' }),
        }),
        200,
      )) as { token: string };
      return `${baseUrl}/embed?token=${body.token}`;
    };
    const frameOf = (page: Page) => page.frames().find((frame) => frame.url().startsWith(baseUrl));
    const blank = await timeFrame(
      newPage,
      parentUrl,
      async () => `${parentUrl}blank`,
      (page) =>
        page.waitForFunction(`document.getElementById('frame').contentDocument?.readyState === 'complete'`),
    );
    const dashboard = await timeFrame(newPage, parentUrl, token, async (page) => {
      for (;;) {
        const embedded = frameOf(page);
        if (embedded) {
          // A locator, not an evaluated string: the dashboard's CSP forbids eval, as it should.
          await embedded
            .locator('.conversation-list li')
            .nth(CONVERSATIONS - 1)
            .waitFor();
          return;
        }
        await page.waitForTimeout(5);
      }
    });
    const fmt = (value: number) => value.toFixed(0);
    return [
      `### embed (${RUNS} runs each, ${CONVERSATIONS} conversations)`,
      '',
      '| built app | gzip KB |',
      '|---|---:|',
      `| JS | ${(sizes.js / 1024).toFixed(1)} |`,
      `| CSS | ${(sizes.css / 1024).toFixed(1)} |`,
      '',
      '| iframe load to | p50 ms | p90 ms | vs blank p50 |',
      '|---|---:|---:|---:|',
      `| blank page (baseline) | ${fmt(percentile(blank, 50))} | ${fmt(percentile(blank, 90))} | 1.0x |`,
      `| conversations list, ${CONVERSATIONS} rendered | ${fmt(percentile(dashboard, 50))} | ${fmt(percentile(dashboard, 90))} | ${(percentile(dashboard, 50) / percentile(blank, 50)).toFixed(1)}x (+${fmt(percentile(dashboard, 50) - percentile(blank, 50))} ms) |`,
    ].join('\n');
  } finally {
    await browser.close();
    parent.close();
    await system.close();
  }
}
