import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { KyselyPlugin, PluginTransformResultArgs, QueryResult, UnknownRow } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { EXPORT_PAGE_SIZE } from '../src/consent/routes';
import { type TestSystem } from '../../../system-test/system';
import {
  system,
  acme,
  acmeKey,
  useConsentSystem,
  nextPhone,
  newAccount,
  webForm,
  inboundSms,
} from './consent-system';

useConsentSystem();

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
