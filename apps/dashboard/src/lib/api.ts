import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from './leadline-api';

/**
 * The partner API's schemas. The embed API mounts the same route plugins with the same relative paths,
 * so its requests and answers are typed from the partner document (`bash scripts/generate-api-types.sh`).
 */
export type Schemas = components['schemas'];

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

/**
 * The session a token opens. `/session` is the embed API's own route, hidden from the partner
 * document, so its answer is written here by hand (the server's `EmbedSession` schema defines it).
 */
export interface Session {
  account: { id: string; company_name: string; logo_url: string | null; accent_color: string | null };
  user: { name: string | null; role: 'owner' | 'admin' | 'member' };
  view: 'full' | 'conversations' | 'leads' | 'sequences' | 'settings';
  parent_origin: string | null;
  expires_at: string;
  capabilities: Record<string, boolean>;
}

/** `/session` in the shape openapi-typescript generates, so one client and one middleware serve every call. */
interface EmbedPaths {
  '/session': {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    get: {
      parameters: { query?: never; header?: never; path?: never; cookie?: never };
      requestBody?: never;
      responses: { 200: { headers: { [name: string]: unknown }; content: { 'application/json': Session } } };
    };
  };
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

export const bearer = (token: string) => `Bearer ${token}`;

/**
 * Sends the current token unless the call names its own, and turns every answer that is not a
 * success into a thrown ApiError; `onUnauthorized` hears of a 401 for the token in use.
 */
export function embedAuthentication(getToken: () => string, onUnauthorized: () => void): Middleware {
  return {
    onRequest({ request }) {
      if (!request.headers.has('authorization')) request.headers.set('authorization', bearer(getToken()));
      return request;
    },
    async onResponse({ request, response }) {
      if (response.ok) return undefined;
      const json = ((await response.json().catch(() => null)) ?? {}) as Record<string, unknown>;
      if (response.status === 401 && request.headers.get('authorization') === bearer(getToken())) {
        onUnauthorized();
      }
      throw new ApiError(
        response.status,
        String(json.code ?? 'error'),
        problemMessage(json, response.status),
      );
    },
  };
}

/**
 * The embed API with the token held in memory (never a cookie or web storage, which browsers block
 * in third-party frames): requests carry no cookies and no referrer, only the Bearer token.
 */
export function createApi(getToken: () => string, onUnauthorized: () => void) {
  const client = createClient<paths & EmbedPaths>({
    baseUrl: API_BASE,
    credentials: 'omit',
    referrerPolicy: 'no-referrer',
  });
  client.use(embedAuthentication(getToken, onUnauthorized));
  return client;
}

export type Api = ReturnType<typeof createApi>;

/** A call's answer; failures never get here, the middleware throws them. */
export function dataOf<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error !== undefined || result.data === undefined) {
    throw new ApiError(result.response.status, 'error', `Request failed (${result.response.status}).`);
  }
  return result.data;
}

/** Reads the session a token opens, without adopting the token. */
export const sessionOf = async (api: Api, token: string) =>
  dataOf(await api.GET('/session', { headers: { authorization: bearer(token) } }));

/**
 * An upload's body: the file as the multipart part `file`. openapi-fetch sends FormData as it is (with
 * its boundary); the document types a binary part as a string, hence the cast.
 */
export const fileUpload = (file: File) => {
  const form = new FormData();
  form.append('file', file);
  return form as unknown as Schemas['ContextFileUpload'];
};
