import type { App } from '../services/command-api/src/app';

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** A partner's view of the API: every request carries its key, paths are relative to /v1. */
export function partnerClient(app: App, key: string) {
  const call = async (method: Method, path: string, body?: unknown) => {
    const response = await app.inject({
      method,
      url: `/v1${path}`,
      headers: { 'x-partner-key': key },
      ...(body !== undefined && { payload: body as object }),
    });
    return {
      status: response.statusCode,
      headers: response.headers,
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- assertions read any field
      body: (response.body ? response.json() : undefined) as any,
    };
  };
  return {
    get: (path: string) => call('GET', path),
    post: (path: string, body?: unknown) => call('POST', path, body ?? {}),
    patch: (path: string, body: unknown) => call('PATCH', path, body),
    delete: (path: string) => call('DELETE', path),
  };
}

export type PartnerClient = ReturnType<typeof partnerClient>;

/**
 * The same partner's view over real HTTP, of a command API process at `baseUrl` (`http://host:port`):
 * what a partner's integration sees.
 */
export function httpPartnerClient(baseUrl: string, key: string): PartnerClient {
  const call = async (method: Method, path: string, body?: unknown) => {
    const response = await fetch(`${baseUrl}/v1${path}`, {
      method,
      headers: { 'x-partner-key': key, ...(body !== undefined && { 'content-type': 'application/json' }) },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return {
      status: response.status,
      headers: Object.fromEntries(response.headers),
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- assertions read any field
      body: (text ? JSON.parse(text) : undefined) as any,
    };
  };
  return {
    get: (path: string) => call('GET', path),
    post: (path: string, body?: unknown) => call('POST', path, body ?? {}),
    patch: (path: string, body: unknown) => call('PATCH', path, body),
    delete: (path: string) => call('DELETE', path),
  };
}
