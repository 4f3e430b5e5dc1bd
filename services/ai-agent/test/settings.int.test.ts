import { randomUUID } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fakeClock, logSize } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newAccount, startAgentSystem, type AgentSystem } from './harness';

const clock = fakeClock(new Date());
let world: AgentSystem;
let site: {
  url: string;
  pages: Map<string, (response: ServerResponse, headers: Record<string, unknown>) => void>;
  close(): Promise<void>;
};

beforeAll(async () => {
  world = await startAgentSystem({ clock });
  const pages = new Map<string, (response: ServerResponse, headers: Record<string, unknown>) => void>();
  const server = createServer((request, response) => {
    const page = pages.get(request.url ?? '');
    if (!page) return void response.writeHead(404).end();
    page(response, request.headers);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  site = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    pages,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
});
afterAll(async () => {
  await world?.close();
  await site?.close();
});

function upload(accountId: string, key: 'partner' | 'other', filename: string, content: Buffer | string) {
  const boundary = '----leadline-test-boundary';
  const payload = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: text/plain\r\n\r\n`,
    ),
    Buffer.isBuffer(content) ? content : Buffer.from(content),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return world.system.app
    .inject({
      method: 'POST',
      url: `/v1/accounts/${accountId}/context/files`,
      headers: {
        'x-partner-key': world.keys[key],
        'content-type': `multipart/form-data; boundary=${boundary}`,
      },
      payload,
    })
    .then((response) => ({ status: response.statusCode, body: response.json() }));
}

describe('AI configuration', () => {
  it('stores guided and advanced prompts and shows the composed system prompt with {{company}} filled in', async () => {
    const { partner } = world;
    const account = await newAccount(partner, [
      { name: 'Pay stub', type: 'document', description: 'Most recent one' },
    ]);
    const defaults = await partner.get(`/accounts/${account.id}/settings/prompt`);
    expect(defaults.body).toMatchObject({ mode: 'guided', updated_at: null });
    const guided = await partner.patch(`/accounts/${account.id}/settings/prompt`, {
      mode: 'guided',
      role_persona: 'Maya, the loan assistant of {{company}}',
      tone_voice: 'friendly',
    });
    expect(guided.status).toBe(200);
    expect(guided.body).toMatchObject({
      mode: 'guided',
      role_persona: 'Maya, the loan assistant of {{company}}',
      updated_at: clock.now().toISOString(),
    });
    expect(guided.body.composed_system_prompt).toContain('You are Maya, the loan assistant of Sunrise.');
    expect(guided.body.composed_system_prompt).toContain(
      '- Pay stub (document, required) - Most recent one [MISSING]',
    );
    expect(guided.body.composed_system_prompt).toContain('Company name: Sunrise');

    const partial = await partner.patch(`/accounts/${account.id}/settings/prompt`, {
      mode: 'guided',
      tone_voice: null,
    });
    expect(partial.body).toMatchObject({
      role_persona: 'Maya, the loan assistant of {{company}}',
      tone_voice: null,
    });

    const advanced = await partner.patch(`/accounts/${account.id}/settings/prompt`, {
      mode: 'advanced',
      system_prompt: 'You work for {{company}}. Be terse.',
    });
    expect(
      advanced.body.composed_system_prompt.startsWith(
        'You work for Sunrise. Be terse.\n\n## How this conversation works',
      ),
    ).toBe(true);
    expect((await partner.get(`/accounts/${account.id}/settings/prompt`)).body).toEqual(advanced.body);

    // For a given lead: its fields in the prompt; an unknown lead is a 404.
    await partner.post(`/accounts/${account.id}/leads`, { phone: '+15125550901', name: 'Ana Silva' });
    const forLead = await partner.get(`/accounts/${account.id}/settings/prompt?phone=%2B15125550901`);
    expect(forLead.body.composed_system_prompt).toContain(
      '## The lead\nname: Ana Silva\nphone: +15125550901',
    );
    expect((await partner.get(`/accounts/${account.id}/settings/prompt?phone=5125550999`)).status).toBe(404);
  });

  it('refuses a wrong mode or field type with a 400 that writes nothing', async () => {
    const { partner, system } = world;
    const account = await newAccount(partner);
    const before = await logSize(system.services);
    for (const body of [
      { mode: 'expert' },
      { mode: 'guided', tone_voice: 3 },
      { mode: 'advanced' },
      { mode: 'advanced', system_prompt: 'x', role_persona: 'y' },
      { role_persona: 'no mode' },
    ]) {
      const response = await partner.patch(`/accounts/${account.id}/settings/prompt`, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.code).toBe('validation_failed');
    }
    expect(await logSize(system.services)).toBe(before);
  });

  it('takes .txt and .md context files up to 100 KB, lists and deletes them, and gives them to the AI', async () => {
    const { partner } = world;
    const account = await newAccount(partner);
    const created = await upload(account.id, 'partner', 'faq.md', '# FAQ\nWe lend in {{company}} country.');
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'faq.md', file_type: 'md', file_size: 37 });
    expect((await upload(account.id, 'partner', 'big.txt', 'a'.repeat(100 * 1024 + 1))).status).toBe(413);
    expect((await upload(account.id, 'partner', 'big.txt', 'a'.repeat(100 * 1024 + 1))).body.code).toBe(
      'file_too_large',
    );
    expect((await upload(account.id, 'partner', 'doc.pdf', 'hello')).body.code).toBe('unsupported_file_type');
    const binary = await upload(
      account.id,
      'partner',
      'photo.txt',
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff]),
    );
    expect([binary.status, binary.body.code]).toEqual([400, 'unsupported_file_type']);

    const list = (await partner.get(`/accounts/${account.id}/context/files`)).body;
    expect(list.files.map((file: { name: string }) => file.name)).toEqual(['faq.md']);
    const prompt = (await partner.get(`/accounts/${account.id}/settings/prompt`)).body.composed_system_prompt;
    expect(prompt).toContain('### File: faq.md\n# FAQ\nWe lend in Sunrise country.');

    expect((await partner.delete(`/accounts/${account.id}/context/files/${created.body.id}`)).body).toEqual({
      success: true,
      deleted: true,
    });
    expect((await partner.get(`/accounts/${account.id}/context/files`)).body.files).toEqual([]);
  });

  it('fetches a context URL at create, keeps it in sync, and keeps the last good text when it fails', async () => {
    const { partner } = world;
    const account = await newAccount(partner);
    let version =
      'We offer 30-year fixed mortgages at competitive rates for first-time buyers in Texas and beyond.';
    let failing = false;
    let conditional = 0;
    site.pages.set('/rates', (response, headers) => {
      if (failing) return void response.writeHead(500).end();
      const etag = `"${version.length}"`;
      if (headers['if-none-match'] === etag) {
        conditional++;
        return void response.writeHead(304, { etag }).end();
      }
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', etag });
      response.end(
        `<html><head><title>Our rates</title></head><body><nav>Home | About</nav><article><h1>Rates</h1><p>${version}</p><p>${version}</p></article><footer>(c) Sunrise</footer></body></html>`,
      );
    });
    const created = await partner.post(`/accounts/${account.id}/context/urls`, { url: `${site.url}/rates` });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ url: `${site.url}/rates`, title: 'Our rates', status: 'ok' });
    expect(created.body.last_scraped_at).toEqual(expect.any(String));
    // The same page again, however spelt, is a 409 and stores nothing: the AI would read it twice.
    for (const again of [`${site.url}/rates`, `${site.url.replace('http://', 'HTTP://')}/rates`]) {
      const twice = await partner.post(`/accounts/${account.id}/context/urls`, { url: again });
      expect([twice.status, twice.body.code], again).toEqual([409, 'context_url_exists']);
    }
    expect((await partner.get(`/accounts/${account.id}/context/urls`)).body.urls).toHaveLength(1);
    let prompt = (await partner.get(`/accounts/${account.id}/settings/prompt`)).body.composed_system_prompt;
    expect(prompt).toContain('30-year fixed mortgages');

    // A day later: unchanged (304 to a conditional request), then changed, then failing.
    const agent = world.agents[0]!;
    clock.advance(24 * 3600_000);
    await agent.refreshContext();
    expect(conditional).toBe(1);
    version = 'Now also 15-year fixed mortgages with no origination fee for veterans and teachers alike.';
    clock.advance(24 * 3600_000);
    await agent.refreshContext();
    prompt = (await partner.get(`/accounts/${account.id}/settings/prompt`)).body.composed_system_prompt;
    expect(prompt).toContain('15-year fixed');
    failing = true;
    clock.advance(24 * 3600_000);
    await agent.refreshContext();
    const [listed] = (await partner.get(`/accounts/${account.id}/context/urls`)).body.urls;
    expect(listed).toMatchObject({ status: 'failing', last_error: 'HTTP 500', title: 'Our rates' });
    prompt = (await partner.get(`/accounts/${account.id}/settings/prompt`)).body.composed_system_prompt;
    expect(prompt).toContain('15-year fixed');

    expect((await partner.delete(`/accounts/${account.id}/context/urls/${listed.id}`)).status).toBe(200);
    expect((await partner.get(`/accounts/${account.id}/context/urls`)).body.urls).toEqual([]);
  });

  it('refuses URLs it must not fetch, writing nothing', async () => {
    const { partner, system } = world;
    const account = await newAccount(partner);
    const before = await logSize(system.services);
    const metadata = await partner.post(`/accounts/${account.id}/context/urls`, {
      url: 'http://169.254.169.254/latest/meta-data',
    });
    expect([metadata.status, metadata.body.code]).toEqual([422, 'context_url_unreachable']);
    expect(
      (await partner.post(`/accounts/${account.id}/context/urls`, { url: 'ftp://example.com/x' })).status,
    ).toBe(400);
    expect(await logSize(system.services)).toBe(before);
  });

  it("answers 404 to another partner's key on every AI configuration route", async () => {
    const { partner, other } = world;
    const account = await newAccount(partner);
    const file = await upload(account.id, 'partner', 'a.txt', 'hello');
    expect(file.status).toBe(201);
    const base = `/accounts/${account.id}`;
    const responses = [
      await other.get(`${base}/settings/prompt`),
      await other.patch(`${base}/settings/prompt`, { mode: 'advanced', system_prompt: 'x' }),
      await other.get(`${base}/context/files`),
      await other.delete(`${base}/context/files/${file.body.id}`),
      await other.get(`${base}/context/urls`),
      await other.post(`${base}/context/urls`, { url: `${site.url}/rates` }),
      await other.delete(`${base}/context/urls/${randomUUID()}`),
    ];
    expect(responses.map((response) => [response.status, response.body.code])).toEqual(
      responses.map(() => [404, 'account_not_found']),
    );
    const stranger = await upload(account.id, 'other', 'b.txt', 'hi');
    expect([stranger.status, stranger.body.code]).toEqual([404, 'account_not_found']);
    expect((await partner.get(`${base}/context/files`)).body.files).toHaveLength(1);
  });
});
