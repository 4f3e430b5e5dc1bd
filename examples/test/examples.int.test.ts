import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { topicNames } from '@leadline/events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSystem, type TestSystem } from '../../services/command-api/test/system';
import { countEventsByType } from '../log-replay/replay';
import { onboardCustomer } from '../partner-client/onboard';

const root = join(import.meta.dirname, '../..');
let system: TestSystem;
let baseUrl: string;

beforeAll(async () => {
  system = await startSystem();
  // The partner client speaks real HTTP, as any integrator's would.
  const address = await system.app.listen({ host: '127.0.0.1', port: 0 });
  baseUrl = `${address}/v1`;
});
afterAll(() => system?.close());

describe('integrating from the published contract alone', () => {
  it("keeps the partner client's generated types in step with the served document", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'leadline-client-'));
    try {
      await promisify(execFile)('bash', ['scripts/generate-api-types.sh', join(dir, 'api.d.ts')], {
        cwd: root,
      });
      const fresh = await readFile(join(dir, 'api.d.ts'), 'utf8');
      const committed = await readFile(join(root, 'examples/partner-client/leadline-api.d.ts'), 'utf8');
      expect(committed, 'run bash scripts/generate-api-types.sh').toBe(fresh);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('creates an account, imports a lead and sends a message with the generated client', async () => {
    const result = await onboardCustomer({ baseUrl, partnerKey: await system.createPartner('Example CRM') });
    expect(result.account.name).toBe('Sunrise Mortgage');
    expect(result.lead).toMatchObject({ phone: '+15125550123', status: 'new' });
    expect(result.message).toMatchObject({ success: true, direction: 'outbound', source: 'manual' });
  });

  it("replays both topics from offset 0 with Confluent's deserializer, counting events by type", async () => {
    const { byType, keys } = await countEventsByType({
      brokers: system.env.config.KAFKA_BROKERS,
      registryUrl: system.env.config.SCHEMA_REGISTRY_URL,
      topics: Object.values(topicNames(system.env.config.TOPIC_PREFIX)),
    });
    expect(byType).toMatchObject({
      'account.created': 1,
      'lead.created': 1,
      'message.outbound_requested': 1,
    });
    // Keys are the account or partner id, as plain UUID strings.
    for (const key of keys)
      expect(key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });
});
