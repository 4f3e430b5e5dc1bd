import { readdir, readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';

/**
 * `tsx check.ts <document> <clients dir>`: fails when a client generated from the document lacks an
 * operation or holds a model the document does not name. Generators write one API class per tag and
 * name every schema the document leaves unnamed (`GetUsagePeriodParameter`, `ListContextFiles200Response`,
 * `PromptSettingsUpdateOneOf1`, `LeadDetailsChecklist`), and those names change with the generator, so
 * a partner's code written against them breaks on an upgrade.
 */

const [documentFile, clients] = process.argv.slice(2);
if (!documentFile || !clients) throw new Error('usage: check.ts <document> <clients dir>');

interface Document {
  paths: Record<string, Record<string, { operationId?: string; tags?: string[] }>>;
  components: { schemas: Record<string, unknown> };
}
const document = JSON.parse(await readFile(documentFile, 'utf8')) as Document;
const operationIds = Object.values(document.paths).flatMap((item) =>
  Object.values(item).flatMap((operation) => operation.operationId ?? []),
);
const schemaNames = new Set(Object.keys(document.components.schemas));
/** Names generators make up for unnamed schemas; also refused when a component is called so. */
const INVENTED = /\d+Response$|^OneOf|^AnyOf|InlineObject|_\d+$|Inner$/;

interface Client {
  name: string;
  apis: string;
  models: string;
  extension: string;
  /** Files a generator writes beside the models that are not models. */
  support: string[];
  declares: (source: string, operationId: string) => boolean;
}
const generated: Client[] = [
  {
    name: 'typescript-fetch',
    apis: 'typescript-fetch/apis',
    models: 'typescript-fetch/models',
    extension: '.ts',
    support: ['index'],
    declares: (source, id) => new RegExp(`\\basync ${id}\\(`).test(source),
  },
  {
    name: 'java',
    apis: 'java/src/main/java/dev/leadline/client/api',
    models: 'java/src/main/java/dev/leadline/client/model',
    extension: '.java',
    support: ['AbstractOpenApiSchema'],
    declares: (source, id) => new RegExp(`\\bpublic [\\w<>, ]+ ${id}\\(`).test(source),
  },
];

const filesIn = async (dir: string, extension: string) =>
  (await readdir(join(clients, dir)).catch(() => [] as string[]))
    .filter((file) => file.endsWith(extension))
    .map((file) => join(clients, dir, file));

const log = await readFile(join(clients, 'generator.log'), 'utf8').catch(() => '');
const inlineNames = [...log.matchAll(/Inline schema created as (\S+?)\.? /g)].map((match) => match[1]);

const missing: string[] = [];
const invented: string[] = [];
for (const client of generated) {
  const apiSources = await Promise.all(
    (await filesIn(client.apis, client.extension)).map((file) => readFile(file, 'utf8')),
  );
  for (const id of operationIds) {
    if (!apiSources.some((source) => client.declares(source, id))) missing.push(`${client.name}: ${id}`);
  }
  for (const file of await filesIn(client.models, client.extension)) {
    const model = basename(file, client.extension);
    if (client.support.includes(model)) continue;
    if (!schemaNames.has(model) || INVENTED.test(model)) invented.push(`${client.name}: ${model}`);
  }
}
const misnamed = [...schemaNames].filter((name) => INVENTED.test(name));

const problems = [
  missing.length > 0 &&
    `Operations missing from a generated client (${missing.join(', ')}). Generators write one API class ` +
      'per tag, so a tag that the top-level `webhooks` entries (or another group of operations) also use ' +
      "overwrites that class: give the route's operations a tag of their own, declared in " +
      'openapi-description.ts.',
  invented.length > 0 &&
    `Models the generator had to name (${invented.join(', ')}). Name the schema each comes from with ` +
      '`.meta({ id })` on its zod schema: every request body, response, nested object and union variant. ' +
      'A union of plain types (an enum or a pattern, an IPv4 or an IPv6 address) should be one string ' +
      'with one `pattern`, in a parameter or a property alike.' +
      (inlineNames.length > 0
        ? ` Where the generator found them (operation_status_response, Parent_property, Parent_oneOf): ` +
          `${inlineNames.join(', ')}.`
        : ''),
  misnamed.length > 0 && `Schemas whose names read as generated (${misnamed.join(', ')}): rename them.`,
].filter(Boolean);

if (problems.length > 0) {
  console.error(`[generated clients] ${problems.map((problem) => `\n- ${problem}`).join('')}`);
  process.exit(1);
}
console.log(
  `[generated clients] ${operationIds.length} operations in both clients; every model is a schema of the document`,
);
