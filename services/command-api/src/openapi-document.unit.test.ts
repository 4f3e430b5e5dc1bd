import { beforeAll, describe, expect, it } from 'vitest';
import { errorCatalog } from './http/error-catalog';
import { openApiDocument } from './openapi-document';

/* eslint-disable @typescript-eslint/no-explicit-any -- walking a JSON document */
let document: any;
beforeAll(async () => {
  document = await openApiDocument('https://api.leadline.dev');
});

const operations = () =>
  Object.entries(document.paths).flatMap(([path, item]: [string, any]) =>
    Object.entries(item).map(([method, operation]: [string, any]) => ({ path, method, operation })),
  );

/** Follows `#/components/schemas/…` references. */
const resolve = (schema: any): any =>
  schema?.$ref ? resolve(document.components.schemas[schema.$ref.split('/').pop()]) : schema;

/** Every object schema reachable from `schema` (through properties, items, unions and refs). */
function objectsIn(schema: any, seen = new Set<any>()): any[] {
  const resolved = resolve(schema);
  if (!resolved || typeof resolved !== 'object' || seen.has(resolved)) return [];
  seen.add(resolved);
  const children = [
    ...Object.values(resolved.properties ?? {}),
    resolved.items,
    ...(resolved.anyOf ?? []),
    ...(resolved.oneOf ?? []),
    ...(resolved.allOf ?? []),
  ].filter(Boolean);
  const own = resolved.type === 'object' && resolved.properties ? [resolved] : [];
  return [...own, ...children.flatMap((child) => objectsIn(child, seen))];
}

describe('the contract every route follows', () => {
  it('gives every operation a camelCase operationId, a summary, a description and a declared tag', () => {
    const declared = new Set(document.tags.map((tag: { name: string }) => tag.name));
    for (const tag of document.tags) expect(tag.description, tag.name).toBeTruthy();
    const ids = operations().map(({ path, method, operation }) => {
      const where = `${method.toUpperCase()} ${path}`;
      expect(operation.operationId, where).toMatch(/^[a-z][a-zA-Z0-9]+$/);
      expect(operation.summary, where).toBeTruthy();
      expect(operation.description, where).toBeTruthy();
      expect(operation.tags?.length, where).toBeGreaterThan(0);
      for (const tag of operation.tags) expect(declared.has(tag), `${where}: tag ${tag}`).toBe(true);
      return operation.operationId;
    });
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('refuses unknown fields in every request body, at every level', () => {
    for (const { path, method, operation } of operations()) {
      const schema = operation.requestBody?.content?.['application/json']?.schema;
      if (!schema) continue;
      for (const object of objectsIn(schema)) {
        expect(
          object.additionalProperties,
          `${method.toUpperCase()} ${path}: ${Object.keys(object.properties)}`,
        ).toBe(false);
      }
    }
  });

  it('accepts Idempotency-Key on every POST and PATCH, with its 409 and 422 documented', () => {
    const writes = operations().filter(({ method }) => method === 'post' || method === 'patch');
    expect(writes.length).toBeGreaterThan(0);
    for (const { path, method, operation } of writes) {
      const where = `${method.toUpperCase()} ${path}`;
      expect(operation.parameters, where).toContainEqual({ $ref: '#/components/parameters/Idempotency-Key' });
      expect(operation.responses['409'].description, where).toContain('idempotency_key_in_progress');
      expect(operation.responses['422'].description, where).toContain('idempotency_key_reused');
    }
    expect(document.components.parameters['Idempotency-Key']).toMatchObject({
      in: 'header',
      required: false,
      schema: { type: 'string', maxLength: 255 },
    });
    for (const { operation } of operations().filter(({ method }) => method === 'get' || method === 'delete'))
      expect(operation.parameters ?? []).not.toContainEqual({
        $ref: '#/components/parameters/Idempotency-Key',
      });
  });

  it('answers errors as Problem details, with the rate-limit headers on every answer', () => {
    for (const { path, method, operation } of operations()) {
      for (const [status, response] of Object.entries(operation.responses) as [string, any][]) {
        const where = `${method.toUpperCase()} ${path} ${status}`;
        expect(Object.keys(response.headers), where).toEqual(
          expect.arrayContaining(['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']),
        );
        if (Number(status) >= 400) {
          expect(response.content, where).toEqual({
            'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } },
          });
        }
        if (status === '429' || status === '503')
          expect(response.headers['Retry-After'], where).toBeDefined();
      }
      expect(operation.responses['401'], `${method} ${path}`).toBeDefined();
      expect(operation.responses['429'], `${method} ${path}`).toBeDefined();
    }
  });

  it("makes the Problem's code an enum of the error catalog, each value described", () => {
    const code = document.components.schemas.Problem.properties.code;
    expect(code.enum).toEqual(Object.keys(errorCatalog));
    for (const value of code.enum) expect(code['x-enumDescriptions'][value]).toBeTruthy();
  });

  it('names the resources and the webhook payloads as components', () => {
    expect(Object.keys(document.components.schemas)).toEqual(
      expect.arrayContaining([
        'Account',
        'Lead',
        'LeadDetails',
        'LeadImport',
        'Message',
        'Conversation',
        'Requirement',
        'Webhook',
        'Delivery',
        'Usage',
        'Problem',
        'LeadCreatedEvent',
        'WebhookTestEvent',
      ]),
    );
    const bulkItems = resolve(
      document.paths['/accounts/{id}/leads/bulk'].post.requestBody.content['application/json'].schema,
    ).properties.leads.items;
    expect(bulkItems).toEqual({ $ref: '#/components/schemas/LeadImport' });
  });
});
