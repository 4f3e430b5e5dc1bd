import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

/** What a test received: enough to find the operation and the documented response. */
export interface ObservedResponse {
  method: string;
  /** The request URL as sent, with its query string. */
  url: string;
  statusCode: number;
  headers: Record<string, unknown>;
  body: string;
}

interface DocumentedResponse {
  headers?: Record<string, { $ref?: string; required?: boolean }>;
  content?: Record<string, { schema?: object }>;
}

interface OpenApiDocument {
  paths?: Record<string, Record<string, { responses?: Record<string, DocumentedResponse> }>>;
  components?: { headers?: Record<string, { required?: boolean }> };
}

const DOCUMENT_ID = 'openapi.json';

/**
 * Checks every answer against the OpenAPI document: its status must be documented for the operation,
 * its content type declared, its body valid against the declared schema and the headers the document
 * requires present. Answers of undocumented routes (health, Twilio's webhooks, unknown paths) are not
 * part of the contract and pass. Returns the violations, empty when the answer is as documented.
 */
export function openApiResponseValidator(document: object, basePath: string) {
  const openapi = document as OpenApiDocument;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  // OpenAPI's integer widths; the bounds themselves are checked by minimum and maximum.
  ajv.addFormat('int32', { type: 'number', validate: () => true });
  ajv.addFormat('int64', { type: 'number', validate: () => true });
  ajv.addSchema(document, DOCUMENT_ID);

  const operations = Object.entries(openapi.paths ?? {}).map(([template, item]) => ({
    template,
    pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
    item,
  }));
  const compiled = new Map<object, ValidateFunction>();
  /** Compiles a schema of the document; its `#/…` references point into the document. */
  const validatorFor = (schema: object) => {
    let validate = compiled.get(schema);
    if (!validate) {
      const rebased = JSON.parse(
        JSON.stringify(schema).replaceAll('"$ref":"#/', `"$ref":"${DOCUMENT_ID}#/`),
      ) as object;
      validate = ajv.compile(rebased);
      compiled.set(schema, validate);
    }
    return validate;
  };

  return function check(response: ObservedResponse): string[] {
    const path = response.url.split('?')[0]!;
    if (!path.startsWith(`${basePath}/`)) return [];
    const relative = path.slice(basePath.length);
    const method = response.method.toLowerCase();
    const operation = operations.find(
      (candidate) => candidate.pattern.test(relative) && candidate.item[method] !== undefined,
    );
    if (!operation) return [];
    const where = `${response.method} ${operation.template} → ${response.statusCode}`;
    const responses = operation.item[method]!.responses ?? {};
    const status = [String(response.statusCode), `${String(response.statusCode)[0]}XX`, 'default'].find(
      (key) => responses[key] !== undefined,
    );
    if (!status) return [`${where}: status not documented`];
    const documented = responses[status]!;
    const violations: string[] = [];

    for (const [name, header] of Object.entries(documented.headers ?? {})) {
      const required =
        header.required ??
        (header.$ref ? openapi.components?.headers?.[header.$ref.split('/').pop()!]?.required : false);
      if (required && response.headers[name.toLowerCase()] === undefined) {
        violations.push(`${where}: required header ${name} missing`);
      }
    }

    const contentType = String(response.headers['content-type'] ?? '')
      .split(';')[0]!
      .trim();
    if (!documented.content || response.body === '') return violations;
    if (!documented.content[contentType]) {
      return [...violations, `${where}: content type ${contentType || '(none)'} not documented`];
    }
    const schema = documented.content[contentType]!.schema;
    // Text (CSV) is not JSON: its documented content type is what can be checked.
    if (!schema || contentType.startsWith('text/')) return violations;
    const validate = validatorFor(schema);
    // NDJSON: the schema is each line's.
    const documents = contentType.endsWith('ndjson')
      ? response.body.split('\n').flatMap((line, index) => (line === '' ? [] : [{ line, at: `[${index}]` }]))
      : [{ line: response.body, at: '' }];
    for (const { line, at } of documents) {
      let body: unknown;
      try {
        body = JSON.parse(line);
      } catch {
        return [...violations, `${where}: body${at} is not JSON`];
      }
      if (!validate(body)) {
        violations.push(
          ...(validate.errors ?? []).map(
            (error) => `${where}: body${at}${error.instancePath} ${error.message} (${error.schemaPath})`,
          ),
        );
      }
    }
    return violations;
  };
}
