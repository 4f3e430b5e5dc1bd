import { writeFile } from 'node:fs/promises';
import { openApiDocument } from './openapi-document';

/** `tsx openapi-cli.ts <file> [public URL]`: writes the served OpenAPI document, for linters and clients. */
const [file, publicUrl = 'https://api.leadline.dev'] = process.argv.slice(2);
if (!file) throw new Error('usage: openapi-cli <output file> [public URL]');
await writeFile(file, `${JSON.stringify(await openApiDocument(publicUrl), null, 2)}\n`);
