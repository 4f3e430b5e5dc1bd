import { describe, expect, it } from 'vitest';
import { openApiResponseValidator } from './openapi-responses';

const document = {
  openapi: '3.1.0',
  paths: {
    '/things/{id}': {
      get: {
        responses: {
          200: {
            description: 'A thing.',
            content: {
              'application/json': { schema: { $ref: '#/components/schemas/Thing' } },
              'application/x-ndjson': { schema: { $ref: '#/components/schemas/Thing' } },
              'text/csv': { schema: { type: 'string' } },
            },
          },
          429: {
            description: 'Slow down.',
            headers: { 'Retry-After': { $ref: '#/components/headers/Retry-After' } },
            content: { 'application/problem+json': { schema: { type: 'object' } } },
          },
        },
      },
    },
  },
  components: {
    headers: { 'Retry-After': { required: true, schema: { type: 'integer' } } },
    schemas: {
      Thing: {
        type: 'object',
        required: ['id', 'at'],
        properties: { id: { type: 'string', format: 'uuid' }, at: { type: 'string', format: 'date-time' } },
        additionalProperties: false,
      },
    },
  },
};

const check = openApiResponseValidator(document, '/v1');
const json = { 'content-type': 'application/json; charset=utf-8' };
const thing = { id: '0194f3a2-7c1e-7b3a-9f00-0123456789ab', at: '2026-01-15T14:30:00.000Z' };

describe('checking answers against the OpenAPI document', () => {
  it('passes an answer as documented', () => {
    const answer = { method: 'GET', url: '/v1/things/1?x=1', statusCode: 200, headers: json };
    expect(check({ ...answer, body: JSON.stringify(thing) })).toEqual([]);
  });

  it('names a body off its schema, an undocumented status, content type or missing header', () => {
    const answer = { method: 'GET', url: '/v1/things/1', headers: json };
    expect(check({ ...answer, statusCode: 200, body: JSON.stringify({ ...thing, id: 'x' }) })).toEqual([
      expect.stringContaining('body/id must match format "uuid"'),
    ]);
    expect(check({ ...answer, statusCode: 200, body: JSON.stringify({ ...thing, extra: 1 }) })).toEqual([
      expect.stringContaining('must NOT have additional properties'),
    ]);
    expect(check({ ...answer, statusCode: 404, body: '{}' })).toEqual([
      'GET /things/{id} → 404: status not documented',
    ]);
    expect(
      check({ ...answer, statusCode: 200, headers: { 'content-type': 'text/plain' }, body: 'hi' }),
    ).toEqual(['GET /things/{id} → 200: content type text/plain not documented']);
    expect(
      check({
        ...answer,
        statusCode: 429,
        headers: { 'content-type': 'application/problem+json' },
        body: '{}',
      }),
    ).toEqual(['GET /things/{id} → 429: required header Retry-After missing']);
  });

  it('checks each line of an NDJSON answer against the schema, and a CSV answer by its type', () => {
    const answer = { method: 'GET', url: '/v1/things/1', statusCode: 200 };
    const ndjson = { 'content-type': 'application/x-ndjson' };
    const lines = `${JSON.stringify(thing)}\n${JSON.stringify(thing)}\n`;
    expect(check({ ...answer, headers: ndjson, body: lines })).toEqual([]);
    expect(check({ ...answer, headers: ndjson, body: `${lines}{"id":"x"}\n` })).toEqual([
      expect.stringContaining('body[2] must have required property'),
      expect.stringContaining('body[2]/id must match format "uuid"'),
    ]);
    expect(check({ ...answer, headers: { 'content-type': 'text/csv' }, body: 'id\r\n1\r\n' })).toEqual([]);
  });

  it('leaves routes outside the document alone', () => {
    expect(check({ method: 'GET', url: '/health/live', statusCode: 200, headers: json, body: '{}' })).toEqual(
      [],
    );
    expect(
      check({ method: 'POST', url: '/v1/things/1', statusCode: 404, headers: json, body: '{}' }),
    ).toEqual([]);
  });
});
