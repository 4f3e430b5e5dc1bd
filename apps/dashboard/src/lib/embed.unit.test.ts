import { describe, expect, it, vi } from 'vitest';
import type { Middleware } from 'openapi-fetch';
import { ApiError, embedAuthentication, problemMessage } from './api';
import { accentOf, textOn } from './brand';
import { leadsFromCsv, parseCsvRows } from './csv';
import { expiringDelay, scheduleExpiring, WARNING_MS } from './expiry';
import { parseSse } from './live';
import { parentChannel, parentOrigin, refreshTokenFrom } from './parent';
import { takeUrlParameters } from './url-token';
import { chooseView } from './views';

describe('the token in the address', () => {
  it('is read once and removed from the address bar at once, with the view', () => {
    const replaceState = vi.fn();
    const taken = takeUrlParameters(
      { search: '?token=lle_abc&view=leads', pathname: '/embed' } as Location,
      { replaceState } as unknown as History,
    );
    expect(taken).toEqual({ token: 'lle_abc', view: 'leads' });
    expect(replaceState).toHaveBeenCalledWith(null, '', '/embed');
  });

  it('lets &view= override the token view, ignoring unknown views', () => {
    expect(chooseView('leads', 'full')).toBe('leads');
    expect(chooseView('calendar', 'settings')).toBe('settings');
    expect(chooseView(null, 'conversations')).toBe('conversations');
  });
});

describe('messages to the parent page', () => {
  const list = (...origins: string[]) =>
    Object.assign([...origins], { contains: () => false, item: () => null }) as unknown as DOMStringList;

  it("go to the token's parent origin, else the embedding page's origin, never to '*'", () => {
    expect(
      parentOrigin('https://crm.example.com', { ancestorOrigins: list('https://evil.example') }, ''),
    ).toBe('https://crm.example.com');
    expect(parentOrigin(null, { ancestorOrigins: list('http://localhost:4000') }, '')).toBe(
      'http://localhost:4000',
    );
    expect(parentOrigin(null, {}, 'https://crm.example.com/contacts/12?x=1')).toBe('https://crm.example.com');
    expect(parentOrigin(null, {}, '')).toBeNull();
    const target = { postMessage: vi.fn() } as unknown as Window;
    parentChannel(target, 'https://crm.example.com').post({
      type: 'service:message_sent',
      data: { phone: '+1' },
    });
    expect(target.postMessage).toHaveBeenCalledWith(
      { type: 'service:message_sent', data: { phone: '+1' } },
      'https://crm.example.com',
    );
    const unknown = { postMessage: vi.fn() } as unknown as Window;
    parentChannel(unknown, null).post({ type: 'service:token_expiring', data: {} });
    expect(unknown.postMessage).not.toHaveBeenCalled();
  });

  it('accept a refreshed token only from the parent window at its exact origin', () => {
    const parent = {} as Window;
    const message = { type: 'service:refresh_token', token: 'lle_new' };
    const origin = 'https://crm.example.com';
    expect(refreshTokenFrom({ data: message, origin, source: parent }, parent, origin)).toBe('lle_new');
    expect(
      refreshTokenFrom({ data: message, origin: 'https://evil.example', source: parent }, parent, origin),
    ).toBeNull();
    expect(refreshTokenFrom({ data: message, origin, source: {} as Window }, parent, origin)).toBeNull();
    expect(
      refreshTokenFrom({ data: { type: 'other', token: 'x' }, origin, source: parent }, parent, origin),
    ).toBeNull();
    expect(
      refreshTokenFrom({ data: { type: 'service:refresh_token' }, origin, source: parent }, parent, origin),
    ).toBeNull();
    expect(refreshTokenFrom({ data: message, origin, source: parent }, parent, null)).toBeNull();
  });
});

describe('token expiry warning', () => {
  it('is due 5 minutes before expiry, or at once when less is left', () => {
    const now = Date.parse('2026-03-02T15:00:00Z');
    expect(expiringDelay('2026-03-02T16:00:00Z', now)).toBe(60 * 60_000 - WARNING_MS);
    expect(expiringDelay('2026-03-02T15:02:00Z', now)).toBe(0);
  });

  it('fires once, and a refreshed token cancels the old warning', () => {
    vi.useFakeTimers();
    try {
      const warn = vi.fn();
      const cancel = scheduleExpiring(new Date(Date.now() + 6 * 60_000).toISOString(), Date.now, warn);
      vi.advanceTimersByTime(59_000);
      expect(warn).not.toHaveBeenCalled();
      vi.advanceTimersByTime(1_000);
      expect(warn).toHaveBeenCalledTimes(1);
      cancel();
      const stale = vi.fn();
      scheduleExpiring(new Date(Date.now() + 6 * 60_000).toISOString(), Date.now, stale)();
      vi.advanceTimersByTime(10 * 60_000);
      expect(stale).not.toHaveBeenCalled();
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('CSV import', () => {
  it('reads quoted fields with commas, quotes and line breaks', () => {
    expect(parseCsvRows('a,b\r\n"x, y","say ""hi""\nthere"\n\n')).toEqual([
      ['a', 'b'],
      ['x, y', 'say "hi"\nthere'],
    ]);
  });

  it('maps header names to lead fields and leaves out empty cells and unknown columns', () => {
    const parsed = leadsFromCsv(
      '\uFEFFPhone,Name,E-mail,Email,Loan Type\n5125550101,Ana Diaz,,ana@example.com,FHA\n,Nobody,,,\n',
    );
    expect(parsed.leads).toEqual([
      { phone: '5125550101', name: 'Ana Diaz', email: 'ana@example.com' },
      { name: 'Nobody' },
    ]);
    expect(parsed.ignoredColumns).toEqual(['E-mail', 'Loan Type']);
    expect(leadsFromCsv('name\nAna\n').error).toMatch(/phone/);
    expect(leadsFromCsv('').error).toMatch(/empty/);
  });
});

describe('live stream', () => {
  it('splits server-sent events and keeps an unfinished one for the next chunk', () => {
    const { events, rest } = parseSse(
      'retry: 2000\n\nid: 12\nevent: change\ndata: {"a":1}\n\n: keep-alive\n\nid: 13\nevent: ch',
    );
    expect(events).toEqual([{ id: '12', event: 'change', data: '{"a":1}' }]);
    expect(rest).toBe('id: 13\nevent: ch');
  });
});

describe('branding', () => {
  it('uses only hex accent colours, with readable text on them', () => {
    expect(accentOf('#0F766E')).toBe('#0F766E');
    expect(accentOf('red;background:url(x)')).toBe('#2563eb');
    expect(textOn('#0F766E')).toBe('#ffffff');
    expect(textOn('#fde047')).toBe('#000000');
  });
});

describe('problem messages', () => {
  it('names what is wrong with which field, steps counted from one', () => {
    expect(
      problemMessage(
        {
          code: 'validation_failed',
          detail: 'The request is not valid.',
          errors: [{ field: 'body.steps.1.message', message: 'Unknown template variable {{frist_name}}.' }],
        },
        400,
      ),
    ).toBe('The request is not valid. steps 2 message: Unknown template variable {{frist_name}}.');
    expect(
      problemMessage({ code: 'embed_role_forbidden', detail: 'The member role may not do this.' }, 403),
    ).toBe('The member role may not do this.');
    expect(problemMessage({}, 502)).toBe('Request failed (502).');
  });
});

describe('the embed API client', () => {
  type Hooks = Required<Extract<Middleware, { onRequest: unknown; onResponse?: unknown }>>;
  const call = { schemaPath: '/session', params: {}, id: '1', options: {} } as Parameters<
    Hooks['onRequest']
  >[0];
  const problem = (status: number) =>
    new Response(JSON.stringify({ code: 'invalid_embed_token', detail: 'The token is not valid.' }), {
      status,
      headers: { 'content-type': 'application/problem+json' },
    });

  it('sends the token in use unless the call names its own', async () => {
    const { onRequest } = embedAuthentication(() => 'lle_current', vi.fn()) as Hooks;
    const plain = (await onRequest({ ...call, request: new Request('http://dashboard/embed/api/session') }))!;
    expect((plain as Request).headers.get('authorization')).toBe('Bearer lle_current');
    const own = new Request('http://dashboard/embed/api/session', {
      headers: { authorization: 'Bearer lle_new' },
    });
    const named = (await onRequest({ ...call, request: own }))!;
    expect((named as Request).headers.get('authorization')).toBe('Bearer lle_new');
  });

  it('throws a problem as an ApiError, and ends the session only on a 401 for the token in use', async () => {
    const onUnauthorized = vi.fn();
    const { onResponse } = embedAuthentication(() => 'lle_current', onUnauthorized) as Hooks;
    const answer = (token: string, response: Response) =>
      onResponse({
        ...call,
        request: new Request('http://dashboard/embed/api/session', {
          headers: { authorization: `Bearer ${token}` },
        }),
        response,
      });
    await expect(answer('lle_new', problem(401))).rejects.toEqual(
      new ApiError(401, 'invalid_embed_token', 'The token is not valid.'),
    );
    expect(onUnauthorized).not.toHaveBeenCalled();
    await expect(answer('lle_current', problem(401))).rejects.toBeInstanceOf(ApiError);
    expect(onUnauthorized).toHaveBeenCalledOnce();
    await expect(answer('lle_current', new Response('<html>', { status: 502 }))).rejects.toMatchObject({
      status: 502,
      code: 'error',
      message: 'Request failed (502).',
    });
    expect(await answer('lle_current', new Response('{}', { status: 200 }))).toBeUndefined();
  });
});
