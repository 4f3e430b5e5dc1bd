import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { newUuid } from '@leadline/runtime';
import type { KyselyPlugin, PluginTransformResultArgs, QueryResult, UnknownRow } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logSize } from '@leadline/test-kit';
import { EXPORT_PAGE_SIZE } from '../src/consent/routes';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

let system: TestSystem;
let acme: PartnerClient;
let other: PartnerClient;
let acmeKey: string;

beforeAll(async () => {
  system = await startSystem();
  acmeKey = await system.createPartner('Acme CRM');
  acme = partnerClient(system.app, acmeKey);
  other = partnerClient(system.app, await system.createPartner('Other CRM'));
});
afterAll(async () => {
  await system?.close();
});

let phones = 0;
const nextPhone = () => `+1512555${String(1000 + ++phones).padStart(4, '0')}`;
const path = (phone: string) => encodeURIComponent(phone);

async function newAccount(fields: Record<string, unknown> = {}) {
  const { status, body } = await acme.post('/accounts', { name: 'Sunrise Mortgage', ...fields });
  expect(status).toBe(201);
  return body as { id: string; phone_number: string; consent_required: boolean };
}

const webForm = {
  method: 'web_form',
  captured_at: '2026-01-05T14:30:00Z',
  source_url: 'https://sunrise.example/apply',
  ip_address: '203.0.113.7',
  disclosure_text: 'By submitting, I agree to receive texts about my loan from Sunrise Mortgage.',
  evidence_url: 'https://evidence.example/forms/881.pdf',
};

async function inboundSms(to: string, from: string, body: string) {
  const response = await system.app.inject({
    method: 'POST',
    url: '/twilio/sms',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      MessageSid: `SM${newUuid().replaceAll('-', '')}`,
      From: from,
      To: to,
      Body: body,
      NumMedia: '0',
    }).toString(),
  });
  expect(response.statusCode).toBe(200);
}

describe('consent_required', () => {
  it('is on for new accounts unless the partner says otherwise, and can be changed', async () => {
    expect((await newAccount()).consent_required).toBe(true);
    const off = await newAccount({ consent_required: false });
    expect(off.consent_required).toBe(false);
    const { body } = await acme.patch(`/accounts/${off.id}`, { consent_required: true });
    expect(body.consent_required).toBe(true);
    expect((await acme.get(`/accounts/${off.id}`)).body.consent_required).toBe(true);
  });
});

describe("a lead's consent trail", () => {
  it('records consent given on import, once, with its evidence', async () => {
    const account = await newAccount();
    const phone = nextPhone();
    const imported = await acme.post(`/accounts/${account.id}/leads`, {
      phone,
      name: 'Ana Silva',
      consent: webForm,
    });
    expect(imported.status).toBe(201);
    expect(imported.body).toMatchObject({ action: 'created', consent_recorded: true });
    // Imported again with the same consent (a nightly sync): the trail does not grow.
    const again = await acme.post(`/accounts/${account.id}/leads`, { phone, consent: webForm });
    expect(again.body).toMatchObject({ action: 'skipped', consent_recorded: false });

    const { status, body } = await acme.get(`/accounts/${account.id}/leads/${path(phone)}/consent`);
    expect(status).toBe(200);
    expect(body).toEqual({
      phone,
      status: 'granted',
      consent_required: true,
      opted_out: false,
      records: [
        {
          id: expect.any(String),
          phone,
          lead_name: 'Ana Silva',
          action: 'granted',
          ...webForm,
          captured_at: '2026-01-05T14:30:00.000Z',
          recorded_at: expect.any(String),
          recorded_via: 'import',
          recorded_by: expect.stringMatching(/^partner_key:/),
          keyword: null,
          message: null,
        },
      ],
      total: 1,
      limit: 50,
      offset: 0,
    });
  });

  it('records consent by its own route: 201 when new, 200 with the same record when repeated', async () => {
    const account = await newAccount();
    const phone = nextPhone();
    await acme.post(`/accounts/${account.id}/leads`, { phone });
    const paper = {
      method: 'paper',
      captured_at: '2026-02-01T09:00:00-05:00',
      evidence_url: 'https://evidence.example/signed/12.pdf',
    };
    const first = await acme.post(`/accounts/${account.id}/leads/${path(phone)}/consent`, paper);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      success: true,
      recorded: true,
      status: 'granted',
      record: {
        action: 'granted',
        method: 'paper',
        captured_at: '2026-02-01T14:00:00.000Z',
        recorded_via: 'api',
        source_url: null,
        ip_address: null,
        evidence_url: paper.evidence_url,
      },
    });
    const second = await acme.post(`/accounts/${account.id}/leads/${path(phone)}/consent`, paper);
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ recorded: false, record: { id: first.body.record.id } });
    expect((await acme.get(`/accounts/${account.id}/leads/${path(phone)}/consent`)).body.total).toBe(1);
  });

  it('shows a STOP as a revocation with the message that revoked it, and START as a grant again', async () => {
    const account = await newAccount();
    const phone = nextPhone();
    await acme.post(`/accounts/${account.id}/leads`, { phone, consent: webForm });
    await inboundSms(account.phone_number, phone, 'Stop.');
    const afterStop = (await acme.get(`/accounts/${account.id}/leads/${path(phone)}/consent`)).body;
    expect(afterStop).toMatchObject({ status: 'revoked', opted_out: true, total: 2 });
    expect(afterStop.records[1]).toMatchObject({
      action: 'revoked',
      method: 'sms_keyword',
      recorded_via: 'sms',
      recorded_by: 'system:twilio-inbound',
      keyword: expect.any(String),
      message: { body: 'Stop.', received_at: afterStop.records[1].captured_at },
    });

    await inboundSms(account.phone_number, phone, 'START');
    const afterStart = (await acme.get(`/accounts/${account.id}/leads/${path(phone)}/consent`)).body;
    expect(afterStart).toMatchObject({ status: 'granted', opted_out: false, total: 3 });
    expect(afterStart.records.map((record: { action: string }) => record.action)).toEqual([
      'granted',
      'revoked',
      'granted',
    ]);
    expect(afterStart.records[2]).toMatchObject({
      method: 'sms_keyword',
      keyword: 'START',
      message: { body: 'START' },
    });
  });

  it('shows a revocation written in words as such, with the rule that read it', async () => {
    const account = await newAccount();
    const phone = nextPhone();
    await acme.post(`/accounts/${account.id}/leads`, { phone, consent: webForm });
    await inboundSms(account.phone_number, phone, 'Please stop texting me.');
    const trail = (await acme.get(`/accounts/${account.id}/leads/${path(phone)}/consent`)).body;
    expect(trail).toMatchObject({ status: 'revoked', opted_out: true, total: 2 });
    expect(trail.records[1]).toMatchObject({
      action: 'revoked',
      method: 'sms_free_text',
      keyword: expect.any(String),
      message: { body: 'Please stop texting me.' },
    });
  });

  it('keeps a STOP in force over consent captured before it, however late that is recorded', async () => {
    const account = await newAccount();
    const phone = nextPhone();
    await acme.post(`/accounts/${account.id}/leads`, { phone });
    await inboundSms(account.phone_number, phone, 'STOP');
    const older = await acme.post(`/accounts/${account.id}/leads/${path(phone)}/consent`, webForm);
    expect(older.body).toMatchObject({ recorded: true, status: 'revoked' });
  });

  it('records consent per lead of a bulk import, reporting the bad ones without refusing the rest', async () => {
    const account = await newAccount();
    const [good, future, badIp] = [nextPhone(), nextPhone(), nextPhone()];
    const { status, body } = await acme.post(`/accounts/${account.id}/leads/bulk`, {
      leads: [
        { phone: good, consent: { method: 'import', captured_at: '2025-11-02T10:00:00Z' } },
        { phone: future, consent: { method: 'verbal', captured_at: '2099-01-01T00:00:00Z' } },
        { phone: badIp, consent: { ...webForm, ip_address: '999.1.1.1' } },
      ],
    });
    expect(status).toBe(200);
    expect(body).toMatchObject({ imported: 1, consents_recorded: 1 });
    expect(body.errors).toEqual([
      {
        index: 1,
        phone: future,
        code: 'validation_failed',
        message: 'consent.captured_at: Must not be in the future.',
      },
      {
        index: 2,
        phone: badIp,
        code: 'validation_failed',
        message: expect.stringMatching(/^consent\.ip_address/),
      },
    ]);
    const trail = (await acme.get(`/accounts/${account.id}/leads/${path(good)}/consent`)).body;
    expect(trail.records).toMatchObject([{ method: 'import', recorded_via: 'bulk_import' }]);
  });
});

describe('bad input and tenancy', () => {
  it('answers bad consent input with a 400 problem naming the field, writing nothing', async () => {
    const account = await newAccount();
    const phone = nextPhone();
    await acme.post(`/accounts/${account.id}/leads`, { phone });
    const before = await logSize(system.services);
    const cases: [Record<string, unknown>, string][] = [
      [{ ...webForm, method: 'email' }, 'body.method'],
      [{ ...webForm, captured_at: 'yesterday' }, 'body.captured_at'],
      [{ ...webForm, captured_at: '2099-01-01T00:00:00Z' }, 'body.captured_at'],
      [{ ...webForm, source_url: 'javascript:alert(1)' }, 'body.source_url'],
      [{ ...webForm, ip_address: 'localhost' }, 'body.ip_address'],
      [{ ...webForm, disclosure_text: 'x'.repeat(5001) }, 'body.disclosure_text'],
      [{ ...webForm, signed: true }, 'body.signed'],
      [{ captured_at: webForm.captured_at }, 'body.method'],
    ];
    for (const [sent, field] of cases) {
      const response = await system.app.inject({
        method: 'POST',
        url: `/v1/accounts/${account.id}/leads/${path(phone)}/consent`,
        headers: { 'x-partner-key': acmeKey },
        payload: sent,
      });
      expect(response.statusCode, field).toBe(400);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(response.json(), field).toMatchObject({
        code: 'validation_failed',
        errors: expect.arrayContaining([expect.objectContaining({ field })]),
      });
    }
    // An import whose consent is bad imports nothing either.
    const imported = await acme.post(`/accounts/${account.id}/leads`, {
      phone: nextPhone(),
      consent: { method: 'paper', captured_at: '2099-01-01T00:00:00Z' },
    });
    expect(imported.status).toBe(400);
    expect(imported.body.errors).toEqual([
      { field: 'body.consent.captured_at', message: 'Must not be in the future.' },
    ]);
    for (const query of ['format=xml', 'from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z', 'from=soon']) {
      const exported = await acme.get(`/accounts/${account.id}/consent/export?${query}`);
      expect(exported.status, query).toBe(400);
      expect(exported.body.code).toBe('validation_failed');
    }
    expect(await logSize(system.services)).toBe(before);
    expect((await acme.get(`/accounts/${account.id}/leads/${path(phone)}/consent`)).body.total).toBe(0);
  });

  it("answers another partner's account, and an unknown lead, with a 404 and writes nothing", async () => {
    const account = await newAccount();
    const phone = nextPhone();
    await acme.post(`/accounts/${account.id}/leads`, { phone, consent: webForm });
    const before = await logSize(system.services);
    const attempts = [
      await other.get(`/accounts/${account.id}/leads/${path(phone)}/consent`),
      await other.post(`/accounts/${account.id}/leads/${path(phone)}/consent`, webForm),
      await other.get(`/accounts/${account.id}/consent/export`),
    ];
    for (const attempt of attempts)
      expect(attempt).toMatchObject({ status: 404, body: { code: 'account_not_found' } });
    const unknown = await acme.post(`/accounts/${account.id}/leads/${path(nextPhone())}/consent`, webForm);
    expect(unknown).toMatchObject({ status: 404, body: { code: 'lead_not_found' } });
    expect(await logSize(system.services)).toBe(before);
  });
});

describe('the export', () => {
  it('streams NDJSON and CSV in the order recorded, within the period asked', async () => {
    const account = await newAccount();
    const [ana, bo] = [nextPhone(), nextPhone()];
    await acme.post(`/accounts/${account.id}/leads`, {
      phone: ana,
      name: '=HYPERLINK("https://evil.example")',
      consent: { ...webForm, disclosure_text: 'I agree, "yes",\nto texts.' },
    });
    await acme.post(`/accounts/${account.id}/leads`, { phone: bo, name: 'Bo' });
    await inboundSms(account.phone_number, bo, 'STOP');

    const raw = await system.app.inject({
      method: 'GET',
      url: `/v1/accounts/${account.id}/consent/export`,
      headers: { 'x-partner-key': acmeKey },
    });
    expect(raw.statusCode).toBe(200);
    expect(raw.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
    expect(raw.headers['content-disposition']).toMatch(
      /^attachment; filename="consent-sunrise-mortgage.*\.ndjson"$/,
    );
    const lines = raw.body.split('\n');
    expect(lines.at(-1)).toBe('');
    const records = lines.slice(0, -1).map((line) => JSON.parse(line));
    expect(records).toMatchObject([
      { phone: ana, action: 'granted', method: 'web_form', disclosure_text: 'I agree, "yes",\nto texts.' },
      { phone: bo, lead_name: 'Bo', action: 'revoked', keyword: 'STOP', message: { body: 'STOP' } },
    ]);

    const csv = await system.app.inject({
      method: 'GET',
      url: `/v1/accounts/${account.id}/consent/export?format=csv`,
      headers: { 'x-partner-key': acmeKey },
    });
    expect(csv.statusCode).toBe(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    const [header, first] = csv.body.split('\r\n');
    expect(header).toBe(
      'id,phone,lead_name,action,method,captured_at,recorded_at,recorded_via,recorded_by,source_url,' +
        'ip_address,disclosure_text,evidence_url,keyword,message_id,message_body,message_received_at',
    );
    // Quoted as RFC 4180 says, and a value that would run as a formula is neutralized.
    expect(first).toBe(
      [
        records[0].id,
        ana,
        `"'=HYPERLINK(""https://evil.example"")"`,
        'granted',
        'web_form',
        '2026-01-05T14:30:00.000Z',
        records[0].recorded_at,
        'import',
        records[0].recorded_by,
        webForm.source_url,
        webForm.ip_address,
        '"I agree, ""yes"",\nto texts."',
        webForm.evidence_url,
        '',
        '',
        '',
        '',
      ].join(','),
    );
    expect(csv.body.endsWith('\r\n')).toBe(true);
    expect(csv.body.split('\r\n')).toHaveLength(4);

    // The period: [from, to) on recorded_at.
    const stopAt = records[1].recorded_at as string;
    const since = await system.app.inject({
      method: 'GET',
      url: `/v1/accounts/${account.id}/consent/export?from=${encodeURIComponent(stopAt)}`,
      headers: { 'x-partner-key': acmeKey },
    });
    expect(
      since.body
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).id),
    ).toEqual([records[1].id]);
    const until = await system.app.inject({
      method: 'GET',
      url: `/v1/accounts/${account.id}/consent/export?to=${encodeURIComponent(stopAt)}`,
      headers: { 'x-partner-key': acmeKey },
    });
    expect(
      until.body
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).id),
    ).toEqual([records[0].id]);
    const none = await system.app.inject({
      method: 'GET',
      url: `/v1/accounts/${account.id}/consent/export?format=csv&to=2020-01-01T00:00:00Z`,
      headers: { 'x-partner-key': acmeKey },
    });
    expect(none.body).toBe(`${header}\r\n`);
  });

  describe('of 10,000 records', () => {
    const COUNT = 10_000;
    // Each record carries a long disclosure, so the export is tens of megabytes.
    const disclosure = 'I agree to receive texts about my mortgage application. '.repeat(70).trim();
    let accountId: string;
    let exportBytes = 0;

    beforeAll(async () => {
      const account = await newAccount({ name: 'Big Export Lending' });
      accountId = account.id;
      for (let batch = 0; batch < COUNT / 1000; batch++) {
        const leads = Array.from({ length: 1000 }, (_, i) => ({
          phone: `+1737${String(batch * 1000 + i).padStart(7, '0')}`,
          consent: { method: 'web_form', captured_at: '2026-01-05T14:30:00Z', disclosure_text: disclosure },
        }));
        const { status, body } = await acme.post(`/accounts/${accountId}/leads/bulk`, { leads });
        expect(status).toBe(200);
        expect(body.consents_recorded).toBe(1000);
      }
    }, 300_000);

    /** The export over real HTTP from `app`, read through `sink` (which may hold back). */
    async function exportOver(app: TestSystem['app'], onResponse: (response: IncomingMessage) => void) {
      await app.listen({ port: 0, host: '127.0.0.1' });
      const address = app.server.address() as AddressInfo;
      const response = await new Promise<IncomingMessage>((resolve, reject) => {
        httpRequest(
          {
            host: '127.0.0.1',
            port: address.port,
            path: `/v1/accounts/${accountId}/consent/export`,
            headers: { 'x-partner-key': acmeKey },
          },
          resolve,
        )
          .on('error', reject)
          .end();
      });
      expect(response.statusCode).toBe(200);
      onResponse(response);
      return response;
    }

    it('sends its first bytes before it has read the records after the first page', async () => {
      // Every page the export reads is counted; the second one is held until the client has bytes.
      let pages = 0;
      let firstBytes: () => void = () => undefined;
      const clientHasBytes = new Promise<void>((resolve) => (firstBytes = resolve));
      const deadline = new Promise<never>((_, reject) =>
        setTimeout(
          () => reject(new Error('no bytes reached the client before page 2 was read')),
          30_000,
        ).unref(),
      );
      const pageGate: KyselyPlugin = {
        transformQuery: (args) => args.node,
        async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
          const rows = args.result.rows;
          if (rows.length > 0 && 'message_received_at' in rows[0]! && 'recorded_by' in rows[0]!) {
            pages += 1;
            if (pages === 2) await Promise.race([clientHasBytes, deadline]);
          }
          return args.result;
        },
      };
      const app = await system.appWith({ db: system.services.db.withPlugin(pageGate) });
      let lines = 0;
      let pagesReadAtFirstBytes: number | undefined;
      let tail = '';
      const ids = new Set<string>();
      const response = await exportOver(app, (incoming) => {
        incoming.setEncoding('utf8');
        incoming.on('data', (chunk: string) => {
          pagesReadAtFirstBytes ??= pages;
          firstBytes();
          const parts = (tail + chunk).split('\n');
          tail = parts.pop()!;
          for (const part of parts) ids.add(JSON.parse(part).id);
          lines += parts.length;
        });
      });
      await new Promise((resolve) => response.on('end', resolve));
      expect(pagesReadAtFirstBytes).toBeLessThan(COUNT / EXPORT_PAGE_SIZE);
      expect(pagesReadAtFirstBytes).toBeLessThanOrEqual(2);
      expect(lines).toBe(COUNT);
      expect(ids.size).toBe(COUNT);
      expect(pages).toBe(COUNT / EXPORT_PAGE_SIZE);
    }, 120_000);

    it('holds a page at a time, not the export: the live heap grows by far less than what it sends', async () => {
      const app = await system.appWith({});
      // The heap is measured after a full collection, so garbage not yet collected does not count.
      v8.setFlagsFromString('--expose-gc');
      const gc = runInNewContext('gc') as () => void;
      gc();
      const start = process.memoryUsage().heapUsed;
      let peak = start;
      let sampledAt = 0;
      // A reader taking 64 KB at a time, looking at the live heap every megabyte it has read.
      const sink = new Writable({
        highWaterMark: 64 * 1024,
        write(chunk: Buffer, _encoding, done) {
          exportBytes += chunk.length;
          if (exportBytes - sampledAt > 1024 * 1024) {
            sampledAt = exportBytes;
            gc();
            peak = Math.max(peak, process.memoryUsage().heapUsed);
          }
          setImmediate(done);
        },
      });
      const response = await exportOver(app, (incoming) => incoming.pipe(sink));
      await new Promise((resolve) => sink.on('finish', resolve));
      expect(response.complete).toBe(true);
      expect(exportBytes).toBeGreaterThan(COUNT * disclosure.length);
      // A page of records is a few megabytes; the export is tens of them.
      expect(peak - start).toBeLessThan(exportBytes / 4);
    }, 120_000);
  });
});
