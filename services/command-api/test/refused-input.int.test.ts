import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

let system: TestSystem;
let key: string;
let partner: PartnerClient;
let port: number;

beforeAll(async () => {
  system = await startSystem({ projector: true });
  key = await system.createPartner('Careless CRM');
  partner = partnerClient(system.app, key);
  const address = new URL(await system.app.listen({ host: '127.0.0.1', port: 0 }));
  port = Number(address.port);
});
afterAll(() => system?.close());

/** Sends raw bytes over one connection and reads everything the server answers until it closes. */
function rawRequest(bytes: Buffer | string): Promise<{ status: number; contentType: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.end(bytes));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', body = ''] = text.split('\r\n\r\n', 2);
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]),
        contentType: /^content-type: *(.*)$/im.exec(head)?.[1]?.trim() ?? '',
        body,
      });
    });
  });
}

const send = (options: { url: string; headers?: Record<string, string>; payload: Buffer | string }) =>
  system.app.inject({
    method: 'POST',
    url: options.url,
    headers: { 'x-partner-key': key, ...options.headers },
    payload: options.payload,
  });

const accountNames = async () =>
  ((await partner.get('/accounts?limit=250')).body.accounts as { name: string }[]).map(({ name }) => name);

describe("requests Node's HTTP parser refuses", () => {
  const withKey = `X-Partner-Key: ${'k'.repeat(20)}\r\n`;
  const cases: [string, string, number, string][] = [
    [
      'an overlong request line',
      `GET /v1/accounts?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
      431,
      'headers_too_large',
    ],
    [
      'headers over the limit',
      `GET /v1/accounts HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      431,
      'headers_too_large',
    ],
    [
      'Content-Length with Transfer-Encoding',
      `POST /v1/accounts HTTP/1.1\r\nHost: x\r\n${withKey}Content-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`,
      400,
      'malformed_request',
    ],
    [
      'a bad chunk size',
      `POST /v1/accounts HTTP/1.1\r\nHost: x\r\n${withKey}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
      400,
      'malformed_request',
    ],
    [
      'an invalid header name',
      `GET /v1/accounts HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n`,
      400,
      'malformed_request',
    ],
    ['a NUL in the path', `GET /v1/acc\u0000ounts HTTP/1.1\r\nHost: x\r\n\r\n`, 400, 'malformed_request'],
  ];

  it.each(cases)('answers %s as problem+json with a code', async (_name, request, status, code) => {
    const answer = await rawRequest(request);
    expect(answer.status).toBe(status);
    expect(answer.contentType).toBe('application/problem+json');
    expect(JSON.parse(answer.body)).toMatchObject({ status, code });
  });
});

describe('bodies the server cannot read as sent', () => {
  it('refuses invalid UTF-8 in a JSON body with a 400, and writes nothing', async () => {
    const payload = Buffer.concat([
      Buffer.from('{"name":"Caf'),
      Buffer.from([0xe9]),
      Buffer.from(' Lending"}'),
    ]);
    const response = await send({
      url: '/v1/accounts',
      headers: { 'content-type': 'application/json' },
      payload,
    });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ code: 'bad_request', detail: 'The body is not valid UTF-8.' });
    expect(await accountNames()).not.toContainEqual(expect.stringContaining('Lending'));
  });

  it('refuses a JSON charset other than UTF-8 with a 415, and takes utf-8 in any spelling', async () => {
    const payload = JSON.stringify({ name: 'Latin Homes' });
    for (const charset of ['latin1', 'iso-8859-1', 'utf-16']) {
      const response = await send({
        url: '/v1/accounts',
        headers: { 'content-type': `application/json; charset=${charset}` },
        payload,
      });
      expect(response.statusCode, charset).toBe(415);
      expect(response.json().code, charset).toBe('unsupported_media_type');
    }
    expect(await accountNames()).not.toContain('Latin Homes');
    const accepted = await send({
      url: '/v1/accounts',
      headers: { 'content-type': 'application/json; charset="UTF-8"' },
      payload,
    });
    expect(accepted.statusCode).toBe(201);
  });

  it('refuses a Content-Encoding other than identity with a 415, and writes nothing', async () => {
    const payload = JSON.stringify({ name: 'Zipped Homes' });
    for (const encoding of ['gzip', 'br', 'deflate']) {
      const response = await send({
        url: '/v1/accounts',
        headers: { 'content-type': 'application/json', 'content-encoding': encoding },
        payload,
      });
      expect(response.statusCode, encoding).toBe(415);
      expect(response.json().code, encoding).toBe('unsupported_media_type');
    }
    expect(await accountNames()).not.toContain('Zipped Homes');
  });

  it('refuses a multipart upload without a boundary, or without its closing one, with a 400', async () => {
    const account = (await partner.post('/accounts', { name: 'Multipart Homes' })).body;
    const url = `/v1/accounts/${account.id}/context/files`;
    const part =
      '--b0undary\r\nContent-Disposition: form-data; name="file"; filename="faq.txt"\r\n' +
      'Content-Type: text/plain\r\n\r\nWe lend in Texas.\r\n';
    for (const [name, contentType, payload] of [
      ['no boundary', 'multipart/form-data', `${part}--b0undary--\r\n`],
      ['no closing boundary', 'multipart/form-data; boundary=b0undary', part],
    ]) {
      const response = await send({ url, headers: { 'content-type': contentType! }, payload: payload! });
      expect(response.statusCode, name).toBe(400);
      expect(response.json().code, name).toBe('malformed_multipart');
    }
    expect((await partner.get(`/accounts/${account.id}/context/files`)).body.files).toEqual([]);
  });
});
