/** A problem+json answer of the embed API. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface Session {
  account: { id: string; company_name: string; logo_url: string | null; accent_color: string | null };
  user: { name: string | null; role: 'owner' | 'admin' | 'member' };
  view: 'full' | 'conversations' | 'leads' | 'sequences' | 'settings';
  parent_origin: string | null;
  expires_at: string;
  capabilities: Record<string, boolean>;
}

export const API_BASE = '/embed/api';

/** What the user reads of a problem: its detail, and for an invalid form what is wrong with which field. */
export function problemMessage(json: Record<string, unknown>, status: number): string {
  const detail = typeof json.detail === 'string' ? json.detail : `Request failed (${status}).`;
  if (!Array.isArray(json.errors) || json.errors.length === 0) return detail;
  const fields = (json.errors as { field?: unknown; message?: unknown }[]).slice(0, 3).map((error) => {
    // `body.steps.1.message` reads as `steps 2 message`: people count steps from one.
    const field = String(error.field ?? '')
      .replace(/^body\.?/, '')
      .replace(/\.(\d+)/g, (_, index: string) => ` ${Number(index) + 1}`)
      .replaceAll('.', ' ')
      .replaceAll('_', ' ');
    return field ? `${field}: ${String(error.message)}` : String(error.message);
  });
  return `${detail} ${fields.join('; ')}`;
}

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/**
 * The embed API with the token held in memory (never a cookie or web storage, which browsers block
 * in third-party frames). `onUnauthorized` hears of a token that stopped working.
 */
export function createApi(getToken: () => string, onUnauthorized: () => void) {
  async function request<T>(method: Method, path: string, body?: unknown, token = getToken()): Promise<T> {
    // Form data sets its own multipart content type, boundary included.
    const form = body instanceof FormData;
    const response = await fetch(`${API_BASE}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined && !form && { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : form ? body : JSON.stringify(body),
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
    });
    const text = await response.text();
    const json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    if (!response.ok) {
      if (response.status === 401 && token === getToken()) onUnauthorized();
      throw new ApiError(
        response.status,
        String(json.code ?? 'error'),
        problemMessage(json, response.status),
      );
    }
    return json as T;
  }
  return {
    get: <T>(path: string) => request<T>('GET', path),
    post: <T>(path: string, body: unknown = {}) => request<T>('POST', path, body),
    patch: <T>(path: string, body: unknown) => request<T>('PATCH', path, body),
    delete: <T>(path: string) => request<T>('DELETE', path),
    /** Sends one file as the multipart part `file`. */
    upload: <T>(path: string, file: File) => {
      const form = new FormData();
      form.append('file', file);
      return request<T>('POST', path, form);
    },
    /** Reads the session a token opens, without adopting the token. */
    sessionOf: (token: string) => request<Session>('GET', '/session', undefined, token),
  };
}

export type Api = ReturnType<typeof createApi>;

export const phonePath = (phone: string) => encodeURIComponent(phone);

export const query = (params: Record<string, string | number | boolean | undefined | null>) => {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
};
