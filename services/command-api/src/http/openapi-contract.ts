import { isDeepStrictEqual } from 'node:util';
import { jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { codesByStatus, errorCatalog, type OperationFacts } from './error-catalog';

/**
 * What the routes declare (operationId, summary, description, tags, zod schemas named with
 * `.meta({ id })`) becomes the document here; the rest is derived so that every route, present or
 * future, gets it the same way: the error statuses each operation can answer (from the error catalog),
 * the rate-limit headers on every answer, and components named after the resources.
 */

interface Operation {
  operationId?: string;
  parameters?: unknown[];
  requestBody?: unknown;
  responses: Record<string, Response>;
}
interface Response {
  description: string;
  headers?: Record<string, unknown>;
  content?: Record<string, unknown>;
}
interface Document {
  paths?: Record<string, Record<string, Operation>>;
  webhooks?: unknown;
  components?: {
    schemas?: Record<string, unknown>;
    headers?: Record<string, unknown>;
    parameters?: Record<string, unknown>;
  };
  [key: string]: unknown;
}

const METHODS = new Set(['get', 'post', 'put', 'patch', 'delete']);
const SCHEMAS = '#/components/schemas/';
const ref = (kind: string, name: string) => ({ $ref: `#/components/${kind}/${name}` });

const rateLimitHeaders = {
  'X-RateLimit-Limit': {
    description: 'Requests allowed per minute for the partner key.',
    schema: { type: 'integer', minimum: 1, maximum: 1_000_000, format: 'int32' },
  },
  'X-RateLimit-Remaining': {
    description: 'Requests left in the current minute.',
    schema: { type: 'integer', minimum: 0, maximum: 1_000_000, format: 'int32' },
  },
  'X-RateLimit-Reset': {
    description: 'Seconds until the current minute ends and the count starts again.',
    schema: { type: 'integer', minimum: 0, maximum: 60, format: 'int32' },
  },
};

const retryAfter = {
  description: 'Seconds to wait before retrying.',
  required: true,
  schema: { type: 'integer', minimum: 0, maximum: 86_400, format: 'int32' },
};

const idempotencyKey = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes a retry safe: the first answer for this key is kept 24 hours and replayed to a retry with the ' +
    'same method, path and body, which runs nothing (see Idempotency in the API description).',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[ -~]+$' },
  example: '5f0c6a1e-8a4b-4f7e-9c57-2d1b0c3e9a11',
};

/** Every POST and PATCH accepts `Idempotency-Key`; a replayed answer says so. */
function documentIdempotency(method: string, operation: Operation) {
  if (method !== 'post' && method !== 'patch') return;
  operation.parameters = [...(operation.parameters ?? []), ref('parameters', 'Idempotency-Key')];
}

/** A response's headers: the rate-limit trio on every answer, Retry-After where a retry is invited. */
function headersFor(status: string) {
  return {
    ...Object.fromEntries(Object.keys(rateLimitHeaders).map((name) => [name, ref('headers', name)])),
    ...((status === '429' || status === '503') && { 'Retry-After': ref('headers', 'Retry-After') }),
  };
}

function problemResponse(codes: (keyof typeof errorCatalog)[]): Response {
  return {
    description: codes.map((code) => `\`${code}\`: ${errorCatalog[code].description}`).join('\n\n'),
    content: { 'application/problem+json': { schema: ref('schemas', 'Problem') } },
  };
}

function documentResponses(path: string, method: string, operation: Operation) {
  const facts: OperationFacts = {
    operationId: operation.operationId ?? '',
    method,
    path,
    hasBody: operation.requestBody !== undefined,
    hasInput: operation.requestBody !== undefined || (operation.parameters?.length ?? 0) > 0,
  };
  for (const [status, codes] of codesByStatus(facts)) {
    operation.responses[status] ??= problemResponse(codes);
  }
  operation.responses = Object.fromEntries(
    Object.entries(operation.responses)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([status, response]) => [
        status,
        { ...response, headers: { ...response.headers, ...headersFor(status) } },
      ]),
  );
}

/** Integers say their width: 32 bits when their bounds fit, 64 otherwise (zod's default bounds). */
function addIntegerFormats(value: unknown) {
  if (Array.isArray(value)) value.forEach(addIntegerFormats);
  else if (value && typeof value === 'object') {
    const schema = value as Record<string, unknown>;
    if (schema.type === 'integer' && schema.format === undefined) {
      const fits = (bound: unknown) => typeof bound === 'number' && Math.abs(bound) <= 2_147_483_647;
      schema.format = fits(schema.minimum) && fits(schema.maximum) ? 'int32' : 'int64';
    }
    Object.values(schema).forEach(addIntegerFormats);
  }
}

/** The component names a value refers to, directly. */
function refsIn(value: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(value)) value.forEach((item) => refsIn(item, found));
  else if (value && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      if (key === '$ref' && typeof child === 'string' && child.startsWith(SCHEMAS)) {
        found.add(child.slice(SCHEMAS.length));
      } else refsIn(child, found);
    }
  }
  return found;
}

/**
 * The registry yields every named schema twice, as read (`XInput`) and as written (`X`). Keep the
 * ones the document uses, and drop the `Input` suffix where only one side is used or both are equal.
 */
function tidySchemas(document: Document) {
  const schemas = document.components?.schemas ?? {};
  const used = new Set<string>();
  const pending = [...refsIn({ paths: document.paths, webhooks: document.webhooks })];
  while (pending.length > 0) {
    const name = pending.pop()!;
    if (used.has(name) || !(name in schemas)) continue;
    used.add(name);
    pending.push(...refsIn(schemas[name]));
  }
  const renames = new Map<string, string>();
  for (const name of used) {
    if (!name.endsWith('Input')) continue;
    const plain = name.slice(0, -'Input'.length);
    if (!used.has(plain) || isDeepStrictEqual(schemas[name], schemas[plain])) renames.set(name, plain);
  }
  const rename = (name: string) => renames.get(name) ?? name;
  const kept = Object.fromEntries(
    [...used]
      .sort()
      .flatMap((name) =>
        renames.has(name) && used.has(rename(name)) ? [] : [[rename(name), schemas[name]]],
      ),
  );
  const pattern = new RegExp(`"${SCHEMAS}(${[...renames.keys()].join('|') || '(?!)'})"`, 'g');
  return JSON.parse(
    JSON.stringify({ ...document, components: { ...document.components, schemas: kept } }).replace(
      pattern,
      (_match, name: string) => `"${SCHEMAS}${rename(name)}"`,
    ),
  ) as Document;
}

/**
 * A default in what a client sends is said in words, not with `default`: openapi-typescript (and other
 * generators) read `default` as "always present" and make the field required in a client's request
 * type, where it is exactly the field a client may leave out. Schemas that answers use keep theirs.
 */
function describeRequestDefaults(document: Document) {
  const schemas = document.components?.schemas ?? {};
  const reached = (roots: unknown[]) => {
    const found = new Set<string>();
    const pending = roots.flatMap((root) => [...refsIn(root)]);
    while (pending.length > 0) {
      const name = pending.pop()!;
      if (found.has(name) || !(name in schemas)) continue;
      found.add(name);
      pending.push(...refsIn(schemas[name]));
    }
    return found;
  };
  const operations = Object.values(document.paths ?? {}).flatMap((item) => Object.values(item));
  const answered = reached([operations.map((operation) => operation.responses), document.webhooks]);
  for (const name of reached(operations.map((operation) => operation.requestBody))) {
    if (!answered.has(name)) moveDefaultsToDescriptions(schemas[name]);
  }
}

function moveDefaultsToDescriptions(value: unknown) {
  if (Array.isArray(value)) value.forEach(moveDefaultsToDescriptions);
  else if (value && typeof value === 'object') {
    const schema = value as Record<string, unknown>;
    if ('default' in schema && typeof schema.type === 'string') {
      const said = typeof schema.description === 'string' ? schema.description : '';
      if (!/default/i.test(said)) {
        schema.description = `${said}${said ? ' ' : ''}Default: \`${JSON.stringify(schema.default)}\`.`;
      }
      delete schema.default;
    }
    Object.values(schema).forEach(moveDefaultsToDescriptions);
  }
}

/**
 * A multipart part's encoding (its content types and headers, such as the file name a server reads) is
 * declared on the part's zod schema as `x-encoding` and belongs on the request body's media type.
 */
function documentPartEncodings(document: Document) {
  const schemas = document.components?.schemas ?? {};
  for (const item of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(item)) {
      const media = (operation.requestBody as { content?: Record<string, Record<string, unknown>> })
        ?.content?.['multipart/form-data'];
      const reference = (media?.schema as { $ref?: string } | undefined)?.$ref;
      const schema = (reference ? schemas[reference.slice(SCHEMAS.length)] : media?.schema) as
        { properties?: Record<string, Record<string, unknown>> } | undefined;
      for (const [part, property] of Object.entries(schema?.properties ?? {})) {
        if (!property['x-encoding']) continue;
        media!.encoding = { ...(media!.encoding as object), [part]: property['x-encoding'] };
        delete property['x-encoding'];
      }
    }
  }
}

/**
 * A body without fields (`EmptyBody`) may be left out, as its route's validator allows: @fastify/swagger
 * marks every body required.
 */
function optionalEmptyBodies(document: Document) {
  const schemas = document.components?.schemas ?? {};
  for (const item of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(item)) {
      const body = operation.requestBody as
        { required?: boolean; content?: Record<string, { schema?: { $ref?: string } }> } | undefined;
      const media = Object.values(body?.content ?? {});
      const empty = media.every(({ schema }) => {
        const resolved = (schema?.$ref ? schemas[schema.$ref.slice(SCHEMAS.length)] : schema) as
          { properties?: object; required?: unknown[] } | undefined;
        return resolved?.properties !== undefined && Object.keys(resolved.properties).length === 0;
      });
      if (body && media.length > 0 && empty) body.required = false;
    }
  }
}

interface Parameter {
  name: string;
  in: string;
}
const pascal = (text: string) =>
  text
    .split(/[^A-Za-z0-9]+/)
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join('');

/**
 * A parameter that several operations declare alike (an account's `id`, `limit`, `offset`) becomes one
 * component (`PathId`, `QueryLimit`), referred to by each, so a generator and a reader see one
 * definition.
 */
function shareParameters(document: Document) {
  const operations = Object.values(document.paths ?? {}).flatMap((item) => Object.values(item));
  const uses = new Map<string, { parameter: Parameter; count: number }>();
  for (const operation of operations) {
    for (const parameter of (operation.parameters ?? []) as Parameter[]) {
      if ('$ref' in parameter) continue;
      const key = JSON.stringify(parameter);
      uses.set(key, { parameter, count: (uses.get(key)?.count ?? 0) + 1 });
    }
  }
  const shared = new Map<string, string>();
  const names = new Set<string>();
  for (const [key, { parameter, count }] of uses) {
    const name = `${pascal(parameter.in)}${pascal(parameter.name)}`;
    // Two different parameters of one name stay where they are: neither is the shared one.
    const variants = [...uses.values()].filter(
      (use) => use.count > 1 && use.parameter.in === parameter.in && use.parameter.name === parameter.name,
    );
    if (count < 2 || variants.length > 1 || names.has(name)) continue;
    shared.set(key, name);
    names.add(name);
    document.components = {
      ...document.components,
      parameters: { ...document.components?.parameters, [name]: parameter },
    };
  }
  for (const operation of operations) {
    operation.parameters = operation.parameters?.map((parameter) => {
      const name = shared.get(JSON.stringify(parameter));
      return name ? ref('parameters', name) : parameter;
    });
  }
}

/** `transformObject` for @fastify/swagger: the named schemas, then the derived parts of the contract. */
export const finishOpenApiDocument: typeof jsonSchemaTransformObject = (input) => {
  const document = jsonSchemaTransformObject(input) as Document;
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(item)) {
      if (!METHODS.has(method)) continue;
      documentResponses(path, method, operation);
      documentIdempotency(method, operation);
    }
  }
  // The one server is the public API (OWASP API9: say which servers are internal).
  document.servers = (document.servers as object[] | undefined)?.map((server) => ({
    ...server,
    'x-internal': false,
  }));
  document.components = {
    ...document.components,
    headers: { ...rateLimitHeaders, 'Retry-After': retryAfter },
    parameters: { ...document.components?.parameters, 'Idempotency-Key': idempotencyKey },
  };
  addIntegerFormats(document.components.schemas);
  addIntegerFormats(document.paths);
  const tidy = tidySchemas(document);
  describeRequestDefaults(tidy);
  documentPartEncodings(tidy);
  optionalEmptyBodies(tidy);
  shareParameters(tidy);
  return tidy as ReturnType<typeof jsonSchemaTransformObject>;
};
