import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { topicNames } from '@leadline/events';
import { personalDataKeySettings } from '@leadline/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerClient } from '../../system-test/client';
import { startSystem, type TestSystem } from '../../system-test/system';
import { countEventsByType, replayLog, type LoggedEvent } from '../log-replay/replay';
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

/** A new account with one lead named `name`: what the log then holds about a person. */
async function createNamedLead(name: string, phone: string, metadata?: Record<string, unknown>) {
  const api = partnerClient(system.app, await system.createPartner());
  const account = await api.post('/accounts', { name: 'Harbor Lending' });
  expect(account.status).toBe(201);
  const lead = await api.post(`/accounts/${account.body.id}/leads`, {
    phone,
    name,
    source: 'application',
    ...(metadata && { metadata }),
  });
  expect(lead.status).toBe(201);
  return { accountId: account.body.id as string };
}

const logOptions = () => ({
  brokers: system.env.config.KAFKA_BROKERS,
  registryUrl: system.env.config.SCHEMA_REGISTRY_URL,
  topics: Object.values(topicNames(system.env.config.TOPIC_PREFIX)),
});

/** The operator's command as the README gives it, on this test's log, database and master keys. */
async function runDecryptedReplay(): Promise<{ stdout: string; events: LoggedEvent[] }> {
  const { config } = system.env;
  const masterKeys = personalDataKeySettings(config).masterKeys;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', 'examples/log-replay/decrypt.ts'],
    {
      cwd: root,
      maxBuffer: 64 * 1024 * 1024,
      env: {
        ...process.env,
        DATABASE_URL: config.DATABASE_URL,
        KAFKA_BROKERS: config.KAFKA_BROKERS.join(','),
        SCHEMA_REGISTRY_URL: config.SCHEMA_REGISTRY_URL,
        TOPIC_PREFIX: config.TOPIC_PREFIX,
        PERSONAL_DATA_KEYS: masterKeys.map((key) => key.toString('hex')).join(','),
      },
    },
  );
  const events = stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as LoggedEvent);
  return { stdout, events };
}

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

  it("sees a lead's personal values as opaque sealed strings, with Confluent's deserializer as it is", async () => {
    await createNamedLead('Odalys Ferreira-Quint', '+15125550177');
    const created: LoggedEvent[] = [];
    await replayLog(logOptions(), (event) => {
      if (event.type === 'lead.created') created.push(event);
    });
    const named = created.filter((event) => String(event.data.name).startsWith('sealed:1:'));
    expect(named).toHaveLength(1);
    expect(named[0]!.data.name).not.toContain('Odalys');
    expect(named[0]!.data.phone).toMatch(/^sealed:1:/);
    expect(JSON.stringify(created)).not.toContain('Odalys');
  });

  it('opens the sealed values for an authorised operator, and shows an erased subject as erased', async () => {
    const name = 'Wilhelmina Okonkwo-Brandt';
    const phone = '+15125550188';
    // Metadata: free-form keys (`*` in the sealed value's path) and a number (sealed as JSON).
    const metadata = { loan_amount: 350000, referred_by: 'Cousin Pat' };
    const { accountId } = await createNamedLead(name, phone, metadata);
    await createNamedLead('Teodora Lindqvist', '+15125550199');

    const before = await runDecryptedReplay();
    const created = before.events.find(
      (event) => event.type === 'lead.created' && event.data.phone === phone,
    );
    expect(created?.data).toMatchObject({ name, phone, metadata });

    const keys = system.services.personalDataKeys;
    await keys.eraseSubject(accountId, keys.subjectOf(accountId, 'lead', phone));

    const after = await runDecryptedReplay();
    const erased = after.events.find((event) => event.type === 'lead.created' && event.id === created!.id);
    expect(erased?.data).toMatchObject({
      name: 'erased',
      phone: 'erased',
      metadata: { loan_amount: 'erased', referred_by: 'erased' },
    });
    expect(after.stdout).not.toContain('Wilhelmina');
    expect(after.stdout).not.toContain(phone);
    expect(after.stdout).not.toContain('Cousin Pat');
    // Only that subject: another lead's values still open.
    expect(after.stdout).toContain('Teodora Lindqvist');
  });
});
