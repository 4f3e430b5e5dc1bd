import { fakeClock } from '@leadline/test-kit';
import { afterAll, beforeAll, expect } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

/** What the embed tests share: the system, partners' accounts, their embed tokens and the dashboard's view of the API. */
export let system: TestSystem;
export let acme: PartnerClient;
export let other: PartnerClient;
export const clock = fakeClock();

/** The system, with two partners (Acme CRM and Other CRM), on this file's own database and topics. */
export function useEmbedSystem() {
  beforeAll(async () => {
    system = await startSystem({ clock });
    acme = partnerClient(system.app, await system.createPartner('Acme CRM'));
    other = partnerClient(system.app, await system.createPartner('Other CRM'));
  });
  afterAll(() => system?.close());
}

export async function newAccount(client = acme, fields: Record<string, unknown> = {}) {
  const { body } = await client.post('/accounts', { name: 'Sunrise Mortgage', ...fields });
  return body.id as string;
}

export async function tokenFor(accountId: string, body: Record<string, unknown> = {}, client = acme) {
  const { status, body: answer } = await client.post(`/accounts/${accountId}/embed-token`, body);
  expect(status).toBe(200);
  return answer.token as string;
}

/** The dashboard's view of the API: its token as a Bearer token, paths under /embed/api. */
export function embedClient(token: string) {
  const call = async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown) => {
    const response = await system.app.inject({
      method,
      url: `/embed/api${path}`,
      headers: { authorization: `Bearer ${token}` },
      ...(body !== undefined && { payload: body as object }),
    });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- assertions read any field
    return { status: response.statusCode, body: (response.body ? response.json() : undefined) as any };
  };
  return {
    get: (path: string) => call('GET', path),
    post: (path: string, body?: unknown) => call('POST', path, body ?? {}),
    patch: (path: string, body: unknown) => call('PATCH', path, body),
    delete: (path: string) => call('DELETE', path),
  };
}

/** A context file upload through the embed API, as the dashboard's file picker sends it. */
export const uploadContextFile = async (token: string, accountId: string) =>
  system.app.inject({
    method: 'POST',
    url: `/embed/api/accounts/${accountId}/context/files`,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'multipart/form-data; boundary=b',
    },
    payload:
      '--b\r\nContent-Disposition: form-data; name="file"; filename="faq.md"\r\nContent-Type: text/markdown\r\n\r\n# FAQ\nWe lend in Texas.\r\n--b--\r\n',
  });
