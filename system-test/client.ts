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
