import { createEventCodec, createSchemaRegistry, topicNames } from '@leadline/events';
import { projections, startProjector, type RunningProjector } from '@leadline/projector';
import {
  createDb,
  migrateLog,
  newUuid,
  readLogRanges,
  sealPersonalDataTransform,
  type Database,
} from '@leadline/runtime';
import { eventually } from '@leadline/test-kit';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import {
  appliedEvents,
  eventsAppliedTwice,
  readModelSnapshot,
  recordAppliedEvents,
} from '../../../system-test/log';
import { startSystem, type TestSystem } from '../../../system-test/system';

let system: TestSystem;
let partner: PartnerClient;
let projector: RunningProjector | undefined;
let projectorDb: Kysely<Database>;
let migrationDb: Kysely<Database>;

beforeAll(async () => {
  system = await startSystem({ projector: false });
  await recordAppliedEvents(system.services.db);
  projectorDb = createDb(system.env.config.DATABASE_URL, { maxConnections: 6 });
  migrationDb = createDb(system.env.config.DATABASE_URL, { maxConnections: 4, timeouts: { statementMs: 0 } });
  projector = await startProjector({
    ...system.services,
    db: projectorDb,
    groupId: system.projectorGroupId,
    projections: [...projections, appliedEvents],
  });
  partner = partnerClient(system.app, await system.createPartner('Legacy CRM'));
}, 120_000);
afterAll(async () => {
  await projector?.stop();
  await projectorDb?.destroy();
  await migrationDb?.destroy();
  await system?.close();
});

/** Raw bytes of every record of `topics`, keys and values together. */
async function rawBytes(topics: string[]): Promise<string> {
  const { kafka, admin } = system.services;
  const chunks: Buffer[] = [];
  for (const topic of topics) {
    const ends = await admin.fetchTopicOffsets(topic);
    const ranges = new Map(ends.map((end) => [end.partition, { from: 0n, to: BigInt(end.high) }]));
    await readLogRanges(kafka, admin, topic, ranges, async (_, message) => {
      chunks.push(message.key ?? Buffer.alloc(0), message.value ?? Buffer.alloc(0));
    });
  }
  return Buffer.concat(chunks).toString('latin1');
}

const legacyPhone = (n: number) => `+1512555${String(7000 + n)}`;
const legacyName = (n: number) => `Legacy Borrower ${n} Oakenshield`;
const legacyEmail = (n: number) => `legacy.borrower.${n}@example.org`;

describe('sealing a log written before personal data was sealed', () => {
  it('rewrites it into a new generation under a write loop: every value sealed, nothing lost, nothing applied twice, read models equal to a rebuild', async () => {
    const prefix = system.env.config.TOPIC_PREFIX;
    const account = (await partner.post('/accounts', { name: 'Legacy Co' })).body;
    const partnerId = (
      await system.services.db
        .selectFrom('accounts')
        .select('partner_id')
        .where('id', '=', account.id)
        .executeTakeFirstOrThrow()
    ).partner_id;

    // What the previous version wrote: the same schemas, every value in clear (a codec without sealer).
    const legacyCodec = await createEventCodec(
      createSchemaRegistry(system.env.config.SCHEMA_REGISTRY_URL),
      system.services.topics,
    );
    const producer = system.services.kafka.producer();
    await producer.connect();
    const legacy = await Promise.all(
      Array.from({ length: 20 }, async (_, n) => ({
        key: account.id,
        value: await legacyCodec.encode({
          id: newUuid(),
          type: 'lead.created',
          version: 1,
          account_id: account.id,
          partner_id: partnerId,
          occurred_at: new Date().toISOString(),
          actor: { kind: 'system', service: 'previous-version' },
          correlation_id: newUuid(),
          causation_id: null,
          data: {
            lead_id: newUuid(),
            phone: legacyPhone(n),
            name: legacyName(n),
            first_name: null,
            last_name: null,
            email: legacyEmail(n),
            company: null,
            notes: null,
            source: null,
            external_id: null,
            property_address: null,
            metadata: {},
            status: 'new',
            auto_sequence: false,
            origin: 'api',
          },
        }),
      })),
    );
    await producer.send({ topic: system.services.topics.account, messages: legacy });
    await producer.disconnect();
    const before = await rawBytes(Object.values(topicNames(prefix, 1)));
    expect(before).toContain(legacyName(3));
    await eventually(async () => {
      const { body } = await partner.get(
        `/accounts/${account.id}/leads/${encodeURIComponent(legacyPhone(19))}`,
      );
      return body.name === legacyName(19) ? true : undefined;
    });

    // The write loop: two clients importing leads one at a time while the log is rewritten.
    let stop = false;
    const outcomes: { phone: string; status: number }[] = [];
    const loop = async (client: number) => {
      for (let n = 0; !stop; n++) {
        const phone = `+151255${client + 8}${String(n).padStart(4, '0')}`;
        const { status } = await partner.post(`/accounts/${account.id}/leads`, {
          phone,
          name: `Loop ${client} ${n}`,
        });
        outcomes.push({ phone, status });
      }
    };
    const loops = [loop(0), loop(1)];
    const report = await migrateLog(
      {
        db: migrationDb,
        kafka: system.services.kafka,
        admin: system.services.admin,
        schemaRegistryUrl: system.env.config.SCHEMA_REGISTRY_URL,
        personalDataKeys: system.services.personalDataKeys,
        prefix,
      },
      { partitions: 16, transform: sealPersonalDataTransform },
    );
    expect(report).toMatchObject({ from: 1, to: 2 });
    // A few writes land after the cutover too.
    const acknowledgedBefore = outcomes.filter((outcome) => outcome.status === 201).length;
    await eventually(async () =>
      outcomes.filter((outcome) => outcome.status === 201).length > acknowledgedBefore + 4 ? true : undefined,
    );
    stop = true;
    await Promise.all(loops);

    const acknowledged = outcomes.filter((outcome) => outcome.status === 201);
    expect(acknowledged.length).toBeGreaterThan(10);
    // Refused writes are refused whole (503 log_migrating while the fence is up), nothing else.
    expect(
      outcomes.filter((outcome) => outcome.status !== 201).every((outcome) => outcome.status === 503),
    ).toBe(true);

    // The new generation holds no legacy value in clear, and the read models still read them.
    const after = await rawBytes(Object.values(topicNames(prefix, 2)));
    for (let n = 0; n < 20; n++) {
      expect(after).not.toContain(legacyName(n));
      expect(after).not.toContain(legacyEmail(n));
      expect(after).not.toContain(legacyPhone(n));
    }
    expect(after).toContain('sealed:1:');
    // Every acknowledged write is there, once; the projector applied no event twice.
    const leads = await eventually(async () => {
      const { body } = await partner.get(`/accounts/${account.id}/leads?limit=100`);
      return body.total === 20 + acknowledged.length ? body : undefined;
    });
    expect(leads.total).toBe(20 + acknowledged.length);
    expect(await eventsAppliedTwice(system.services.db)).toEqual([]);

    // A rebuild from the sealed generation reproduces the read models.
    await eventually(async () =>
      system.services.topics.account === topicNames(prefix, 2).account ? true : undefined,
    );
    const live = await readModelSnapshot(system.services.db);
    await system.rebuildReadModels({ groupPrefix: prefix });
    expect(await readModelSnapshot(system.services.db)).toEqual(live);
    const { body } = await partner.get(`/accounts/${account.id}/leads/${encodeURIComponent(legacyPhone(7))}`);
    expect(body).toMatchObject({ name: legacyName(7), email: legacyEmail(7) });
  }, 300_000);
});
