import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { logSize } from '@leadline/test-kit';
import { describe, expect, it } from 'vitest';
import { openEventStream as openStream } from '../../../system-test/event-stream';
import { system, acme, clock, useEmbedSystem, newAccount, tokenFor, embedClient } from './embed-system';

useEmbedSystem();

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
