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

/** Every schema node under `value`, with where it is, not following references. */
function nodesIn(value: any, where: string, found: { schema: any; where: string }[] = []) {
  if (!value || typeof value !== 'object') return found;
  found.push({ schema: value, where });
  for (const [key, child] of Object.entries(value)) nodesIn(child, `${where}/${key}`, found);
  return found;
}

/** The component names reachable from `roots`, following references. */
function componentsReachedFrom(roots: any[]): Set<string> {
  const reached = new Set<string>();
  const pending = roots.flatMap((root) => nodesIn(root, ''));
  while (pending.length > 0) {
    const { schema } = pending.pop()!;
    const name = typeof schema.$ref === 'string' ? schema.$ref.split('/').pop() : undefined;
    if (name && !reached.has(name)) {
      reached.add(name);
      pending.push(...nodesIn(document.components.schemas[name], name));
    }
  }
  return reached;
}

const requestBodies = () =>
  operations().flatMap(({ operation }) => Object.values(operation.requestBody?.content ?? {}));
const responseBodies = () =>
  operations().flatMap(({ operation }) =>
    Object.values(operation.responses).flatMap((response: any) => Object.values(response.content ?? {})),
  );

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
    // Any entry is valid in a bulk import (each is validated on its own and an invalid one is reported
    // in the 200's `errors`), so the document does not call one invalid.
    const bulkItems = resolve(
      document.paths['/accounts/{id}/leads/bulk'].post.requestBody.content['application/json'].schema,
    ).properties.leads.items;
    expect(bulkItems).toEqual({ description: expect.stringContaining('`LeadImport`') });
  });

  it("keeps the webhook payloads' tag apart from the operations' tags", () => {
    // Generators write one API class per tag: a shared tag makes one class overwrite the other.
    const operationTags = new Set(operations().flatMap(({ operation }) => operation.tags));
    const payloadTags = Object.values(document.webhooks).flatMap((item: any) => item.post.tags);
    expect(payloadTags.length).toBeGreaterThan(0);
    for (const tag of payloadTags) expect(operationTags.has(tag), tag).toBe(false);
  });

  it('names every request body, response, nested object and union variant, so generators invent no name', () => {
    for (const { path, method, operation } of operations()) {
      const where = `${method.toUpperCase()} ${path}`;
      for (const content of Object.values(operation.requestBody?.content ?? {}) as any[])
        expect(content.schema.$ref, `${where} request body`).toBeDefined();
      // A plain string (a CSV export) needs no name: generators make no model of it.
      for (const [status, response] of Object.entries(operation.responses) as [string, any][])
        for (const content of Object.values(response.content ?? {}) as any[])
          if (content.schema.type !== 'string')
            expect(content.schema.$ref, `${where} ${status}`).toBeDefined();
      // A union in a parameter becomes a wrapper class that Java's client cannot put in a query string.
      for (const parameter of operation.parameters ?? []) {
        const schema = parameter.schema ?? {};
        expect(schema.anyOf ?? schema.oneOf, `${where} parameter ${parameter.name}`).toBeUndefined();
      }
    }
    for (const [name, component] of Object.entries(document.components.schemas)) {
      for (const { schema, where } of nodesIn(component, name).slice(1)) {
        const isObject = schema.type === 'object' && schema.properties;
        expect(isObject, `${where}: an unnamed object`).toBeFalsy();
      }
    }
  });

  it('makes a parameter that several operations declare alike one component', () => {
    const inline = new Map<string, number>();
    for (const { operation } of operations())
      for (const parameter of operation.parameters ?? [])
        if (!parameter.$ref)
          inline.set(JSON.stringify(parameter), (inline.get(JSON.stringify(parameter)) ?? 0) + 1);
    expect([...inline].filter(([, count]) => count > 1).map(([parameter]) => parameter)).toEqual([]);
    expect(document.components.parameters.PathId).toMatchObject({ in: 'path', name: 'id', required: true });
  });

  it('declares no default in what a client sends, so generated types keep those fields optional', () => {
    // openapi-typescript makes a property with a `default` required (the server fills it in answers).
    const response = componentsReachedFrom(responseBodies());
    const defaults = [...componentsReachedFrom(requestBodies())]
      .filter((name) => !response.has(name))
      .flatMap((name) => nodesIn(document.components.schemas[name], name))
      .filter(({ schema }) => schema.default !== undefined)
      .map(({ where }) => where);
    expect(defaults).toEqual([]);
  });

  it('gives ids, times and links in answers their format', () => {
    const formatOf = (property: string) =>
      // `external_id` is the partner's own id, any string; `tax_id` is a business's EIN, masked.
      property === 'id' || (property.endsWith('_id') && property !== 'external_id' && property !== 'tax_id')
        ? 'uuid'
        : property.endsWith('_at')
          ? 'date-time'
          : property === 'url' || property.endsWith('_url')
            ? 'uri'
            : undefined;
    const missing = [...componentsReachedFrom([...responseBodies(), document.webhooks])]
      .flatMap((name) => nodesIn(document.components.schemas[name], name))
      .flatMap(({ schema, where }) =>
        Object.entries(schema.properties ?? {}).flatMap(([property, value]: [string, any]) => {
          const expected = formatOf(property);
          if (!expected || value.$ref) return [];
          const formats = (value.anyOf ?? [value])
            .filter((variant: any) => variant.type !== 'null')
            .map((variant: any) => variant.format);
          return formats.length === 1 && formats[0] === expected ? [] : [`${where}.${property}: ${expected}`];
        }),
      );
    expect(missing).toEqual([]);
  });

  it('bounds integers by what they count, not by the largest safe integer', () => {
    for (const { schema, where } of nodesIn(document, '#')) {
      if (schema.type !== 'integer') continue;
      expect(Math.abs(schema.maximum ?? 0), where).toBeLessThan(Number.MAX_SAFE_INTEGER);
      expect(Math.abs(schema.minimum ?? 0), where).toBeLessThan(Number.MAX_SAFE_INTEGER);
    }
  });

  it("states the context file's part: its content types and a file name ending in .txt or .md", () => {
    const media =
      document.paths['/accounts/{id}/context/files'].post.requestBody.content['multipart/form-data'];
    expect(media.encoding.file.contentType).toBe('text/plain, text/markdown');
    const pattern = new RegExp(media.encoding.file.headers['Content-Disposition'].schema.pattern);
    expect(pattern.test('form-data; name="file"; filename="faq.MD"')).toBe(true);
    expect(pattern.test('form-data; name="file"; filename="rates.pdf"')).toBe(false);
  });

  it('declares what resume-ai takes: no body, or an empty one', () => {
    const body = document.paths['/accounts/{id}/conversations/{phone}/resume-ai'].post.requestBody;
    expect(body.required).toBeFalsy();
    expect(resolve(body.content['application/json'].schema)).toMatchObject({
      type: 'object',
      properties: {},
      additionalProperties: false,
    });
  });
});
