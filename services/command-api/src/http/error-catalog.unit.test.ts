import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { codesByStatus, errorCatalog, type ErrorCode } from './error-catalog';

const root = join(import.meta.dirname, '../../../..');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.includes('.test.') ? [path] : [];
  });
}

/** Every problem code the source can answer, with its status where the call says it. */
function thrownCodes(): { code: string; status: number | undefined; where: string }[] {
  const found: { code: string; status: number | undefined; where: string }[] = [];
  const patterns: [RegExp, (match: RegExpMatchArray) => [string, number | undefined]][] = [
    [/\bnotFound\(\s*'([a-z_]+)'/g, (m) => [`${m[1]}_not_found`, 404]],
    [/\bconflict\(\s*'([a-z_]+)'/g, (m) => [m[1]!, 409]],
    [/\bbadRequest\(\s*'([a-z_]+)'/g, (m) => [m[1]!, 400]],
    [/\bunavailable\(\s*'([a-z_]+)'/g, (m) => [m[1]!, 503]],
    [/new DomainError\(\s*(\d{3}),\s*'([a-z_]+)'/g, (m) => [m[2]!, Number(m[1])]],
    [/sendProblem\(\s*reply,\s*request,\s*(\d{3}),\s*'([a-z_]+)'/g, (m) => [m[2]!, Number(m[1])]],
    // Fastify's own client errors, named in the error handler.
    [/^\s+(\d{3}): '([a-z_]+)',$/gm, (m) => [m[2]!, Number(m[1])]],
    // Authentication's refusals.
    [/\brefuse\(\s*'([a-z_]+)'/g, (m) => [m[1]!, 401]],
    [/\?\? '(bad_request)'/g, (m) => [m[1]!, 400]],
    // What Node's HTTP parser refuses, answered by the client error handler.
    [/\[(\d{3}), '([a-z_]+)', /g, (m) => [m[2]!, Number(m[1])]],
  ];
  for (const dir of ['packages', 'services']) {
    for (const file of sourceFiles(join(root, dir))) {
      const text = readFileSync(file, 'utf8');
      for (const [pattern, read] of patterns) {
        for (const match of text.matchAll(pattern)) {
          const [code, status] = read(match);
          found.push({ code, status, where: relative(root, file) });
        }
      }
    }
  }
  return found;
}

describe('the error catalog', () => {
  const thrown = thrownCodes();

  it('lists every code the source can answer, with the status it is answered with', () => {
    expect(thrown.length).toBeGreaterThan(20);
    for (const { code, status, where } of thrown) {
      const entry = (errorCatalog as Record<string, { status: number }>)[code];
      expect(entry, `${code} (${where}) is missing from the error catalog`).toBeDefined();
      if (status !== undefined) expect(entry!.status, `${code} in ${where}`).toBe(status);
    }
  });

  it('lists no code that nothing answers', () => {
    const answered = new Set(thrown.map(({ code }) => code));
    expect(Object.keys(errorCatalog).filter((code) => !answered.has(code))).toEqual([]);
  });

  it('gives a route that declares nothing but its schemas the statuses it can answer', () => {
    const statuses = (facts: Parameters<typeof codesByStatus>[0]) =>
      Object.fromEntries([...codesByStatus(facts)].map(([status, codes]) => [status, codes.sort()]));
    expect(
      statuses({
        operationId: 'createWidget',
        method: 'post',
        path: '/accounts/{id}/widgets',
        hasBody: true,
        hasInput: true,
      }),
    ).toEqual({
      400: ['bad_request', 'invalid_idempotency_key', 'malformed_request', 'validation_failed'],
      401: ['invalid_api_key', 'missing_api_key'],
      404: ['account_not_found'],
      409: ['idempotency_key_in_progress'],
      413: ['payload_too_large'],
      414: ['uri_too_long'],
      415: ['unsupported_media_type'],
      422: ['idempotency_key_reused'],
      429: ['rate_limited', 'too_many_failed_authentications'],
      431: ['headers_too_large'],
      500: ['internal_error'],
      503: ['account_held', 'database_busy', 'event_log_unavailable', 'log_migrating', 'projection_lagging'],
    } satisfies Record<number, ErrorCode[]>);
    expect(
      statuses({
        operationId: 'listWebhooks',
        method: 'get',
        path: '/webhooks',
        hasBody: false,
        hasInput: false,
      }),
    ).toEqual({
      // Even without input: a request Node's HTTP parser cannot read.
      400: ['malformed_request'],
      401: ['invalid_api_key', 'missing_api_key'],
      429: ['rate_limited', 'too_many_failed_authentications'],
      431: ['headers_too_large'],
      500: ['internal_error'],
      // A read can find the database busy as a write can.
      503: ['database_busy'],
    });
  });
});
