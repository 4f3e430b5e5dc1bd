import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createDb, newUuid } from '@leadline/runtime';
import { eventually } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../src/app';
import { hashApiKey } from '../src/partners/api-keys';
import { createPartnerKey, listPartnerKeys, revokePartnerKey } from '../src/partners/keys';
import { partnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

let system: TestSystem;
/** A second command API instance: its own app and its own connections to the same database. */
let second: App;
let secondDb: ReturnType<typeof createDb>;

beforeAll(async () => {
  system = await startSystem();
  secondDb = createDb(system.env.config.DATABASE_URL, { maxConnections: 4 });
  second = await system.appWith({ db: secondDb });
});
afterAll(async () => {
  await system?.close();
  await secondDb?.destroy();
});

const status = async (app: App, key: string) => (await partnerClient(app, key).get('/accounts')).status;
const partnerOf = async (key: string) =>
  (
    await system.services.db
      .selectFrom('partner_api_keys')
      .select('partner_id')
      .where('key_hash', '=', hashApiKey(key))
      .executeTakeFirstOrThrow()
  ).partner_id;

describe('partner API keys', () => {
  it('rotate: both keys work during the overlap, and a revoked key is refused by every instance within a second', async () => {
    const oldKey = await system.createPartner('Rotating CRM');
    const partnerId = await partnerOf(oldKey);
    const { key: newKey } = await createPartnerKey(system.services.db, newUuid, partnerId);
    for (const app of [system.app, second]) {
      expect(await status(app, oldKey)).toBe(200);
      expect(await status(app, newKey)).toBe(200);
    }
    // A third active key is refused: two is enough to rotate.
    await expect(createPartnerKey(system.services.db, newUuid, partnerId)).rejects.toMatchObject({
      status: 409,
      code: 'too_many_active_keys',
    });

    const [oldView] = await listPartnerKeys(system.services.db, partnerId);
    await revokePartnerKey(system.services.db, partnerId, oldView!.prefix, new Date());
    await eventually(
      async () =>
        (await status(system.app, oldKey)) === 401 && (await status(second, oldKey)) === 401
          ? true
          : undefined,
      { timeoutMs: 1000, message: 'the revoked key is still accepted somewhere' },
    );
    for (const app of [system.app, second]) expect(await status(app, newKey)).toBe(200);
  });

  it('are listed with prefix, creation and last use, never the secret', async () => {
    const key = await system.createPartner('Listed CRM');
    await partnerClient(system.app, key).get('/accounts');
    const partnerId = await partnerOf(key);
    const listed = await eventually(async () => {
      const keys = await listPartnerKeys(system.services.db, partnerId);
      return keys[0]?.last_used_at ? keys : undefined;
    });
    expect(listed).toEqual([
      {
        id: expect.any(String),
        prefix: key.slice(0, 10),
        created_at: expect.any(Date),
        last_used_at: expect.any(Date),
        revoked_at: null,
      },
    ]);

    // The operator's command line shows the same, and never the key.
    const cli = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        fileURLToPath(new URL('../src/partner-cli.ts', import.meta.url)),
        'keys',
        'list',
        '--partner',
        partnerId,
      ],
      {
        env: { PATH: process.env.PATH, DATABASE_URL: system.env.config.DATABASE_URL },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let output = '';
    cli.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    expect(await new Promise((resolve) => cli.on('exit', resolve))).toBe(0);
    expect(output).toContain(key.slice(0, 10));
    expect(output).toContain('active');
    expect(output).not.toContain(key.slice(10));
  });
});
