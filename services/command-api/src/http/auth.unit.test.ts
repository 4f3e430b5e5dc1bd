import { randomBytes } from 'node:crypto';
import { testDocuments } from '@leadline/test-kit';
import {
  createDb,
  createPersonalDataKeys,
  createSecretBox,
  DEVELOPMENT_WEBHOOK_KEY,
  newUuid,
  systemClock,
  type CommandBus,
} from '@leadline/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../app';
import { generateApiKey } from '../partners/api-keys';

// A database nobody listens on: any lookup fails, so a 401 proves none was made.
const db = createDb('postgres://postgres@127.0.0.1:1/none', { maxConnections: 1 });
let app: App;

beforeAll(async () => {
  app = await buildApp({
    db,
    commands: {} as CommandBus,
    numbers: {
      provisionNumber: async () => ({ phoneNumber: '+15550000000', providerId: 'PN0' }),
      isOwnNumber: async () => true,
      releaseNumber: async () => {},
    },
    clock: systemClock,
    newId: newUuid,
    publicUrl: 'http://127.0.0.1:8080',
    rateLimitPerMinute: 1000,
    authFailuresPerMinute: 3,
    webhookSecrets: createSecretBox(DEVELOPMENT_WEBHOOK_KEY),
    ...testDocuments(db),
    personalDataKeys: createPersonalDataKeys(db, { masterKeys: [randomBytes(32)], hashKey: randomBytes(32) }),
  });
});
afterAll(async () => {
  await app.close();
  await db.destroy();
});

const get = (key: string | undefined, remoteAddress: string) =>
  app.inject({
    method: 'GET',
    url: '/v1/accounts',
    remoteAddress,
    headers: key === undefined ? {} : { 'x-partner-key': key },
  });

describe('partner key authentication', () => {
  it('refuses a key with a wrong checksum without looking it up', async () => {
    const key = generateApiKey();
    const typo = key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a');
    for (const malformed of [typo, 'llk_short', 'too short']) {
      const response = await get(malformed, '10.0.0.1');
      expect(response.statusCode).toBe(401);
      expect(response.json().code).toBe('invalid_api_key');
      expect(response.headers['content-type']).toContain('application/problem+json');
    }
  });

  it('limits failed authentications per client address, before any lookup, with Retry-After', async () => {
    for (let attempt = 0; attempt < 3; attempt++)
      expect((await get('llk_guess', '10.0.0.2')).statusCode).toBe(401);
    const limited = await get(generateApiKey(), '10.0.0.2');
    expect(limited.statusCode).toBe(429);
    expect(limited.json().code).toBe('too_many_failed_authentications');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    // Another address is not affected.
    expect((await get(undefined, '10.0.0.3')).json().code).toBe('missing_api_key');
  });
});
