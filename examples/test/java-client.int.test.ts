import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSystem, type TestSystem } from '../../system-test/system';

const run = promisify(execFile);
const root = join(import.meta.dirname, '../..');
const client = join(root, '.generated-clients/java');
let system: TestSystem;
let baseUrl: string;
let classes: string;

beforeAll(async () => {
  // The Java client openapi-generator makes from the served document, compiled (a no-op when
  // `npm test` has just checked the same document).
  await run('bash', ['scripts/check-generated-clients.sh'], { cwd: root, maxBuffer: 16 * 1024 * 1024 });
  classes = await mkdtemp(join(tmpdir(), 'leadline-java-scenario-'));
  await run('javac', [
    '-encoding',
    'UTF-8',
    '-d',
    classes,
    '-cp',
    `${client}/classes:${client}/dependencies/*`,
    join(root, 'examples/java-client/Scenario.java'),
  ]);
  system = await startSystem();
  const address = await system.app.listen({ host: '127.0.0.1', port: 0 });
  baseUrl = `${address}/v1`;
}, 300_000);
afterAll(async () => {
  await system?.close();
  if (classes) await rm(classes, { recursive: true, force: true });
});

describe('a Java client generated from the document alone', () => {
  it('creates an account, imports a lead, reads the usage of a given month and creates and lists a webhook', async () => {
    const partnerKey = await system.createPartner('Java CRM');
    // A month that is not the current one: a client that lost the parameter gets the current month.
    const month = '2024-02';
    const { stdout } = await run('java', [
      '-cp',
      `${classes}:${client}/classes:${client}/dependencies/*`,
      'Scenario',
      baseUrl,
      partnerKey,
      month,
    ]);
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^account [0-9a-f-]{36}$/);
    expect(lines[1]).toBe('lead created +15125550123');
    expect(lines[2]).toBe(`usage ${month} leads_imported 0`);
    expect(lines[3]).toMatch(/^webhook [0-9a-f-]{36} listed with 1$/);
  });
});
