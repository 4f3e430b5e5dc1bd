import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const root = join(import.meta.dirname, '../../../..');

// The embed API mounts the partner API's routes, so the dashboard's types are the served document's.
it("keeps the dashboard's generated API types in step with the served document", async () => {
  const dir = await mkdtemp(join(tmpdir(), 'leadline-dashboard-'));
  try {
    await promisify(execFile)('bash', ['scripts/generate-api-types.sh', join(dir, 'api.d.ts')], {
      cwd: root,
    });
    const fresh = await readFile(join(dir, 'api.d.ts'), 'utf8');
    const committed = await readFile(join(import.meta.dirname, 'leadline-api.d.ts'), 'utf8');
    expect(committed, 'run bash scripts/generate-api-types.sh').toBe(fresh);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}, 60_000);
