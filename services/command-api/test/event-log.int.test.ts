import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { createKafka } from '@leadline/runtime';
import { eventually } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

let system: TestSystem;
let partner: PartnerClient;

beforeAll(async () => {
  system = await startSystem();
  partner = partnerClient(system.app, await system.createPartner('Log Readers Inc'));
});
afterAll(() => system?.close());

async function readModel() {
  const { db } = system.services;
  return {
    partners: await db.selectFrom('partners').selectAll().orderBy('id').execute(),
    accounts: await db.selectFrom('accounts').selectAll().orderBy('id').execute(),
    team: await db.selectFrom('team_members').selectAll().orderBy('id').execute(),
  };
}

describe('the event log', () => {
  it('leaves the read model equal to a fresh rebuild after twenty concurrent creates and updates', async () => {
    const created = await Promise.all(
      Array.from({ length: 20 }, (_, i) => partner.post('/accounts', { name: `Concurrent ${i % 5}` })),
    );
    expect(created.map((response) => response.status)).toEqual(Array(20).fill(201));
    expect(new Set(created.map((response) => response.body.slug)).size).toBe(20);
    expect(new Set(created.map((response) => response.body.phone_number)).size).toBe(20);
    const target = created[0]!.body.id;
    const updates = await Promise.all([
      ...Array.from({ length: 20 }, (_, i) =>
        partner.patch(`/accounts/${target}`, { metadata: { [`k${i}`]: i } }),
      ),
      ...created.slice(1, 11).map((response) => partner.delete(`/accounts/${response.body.id}`)),
      ...created
        .slice(11)
        .map((response, i) =>
          partner.post(`/accounts/${response.body.id}/team/invite`, { email: `m${i}@example.com` }),
        ),
    ]);
    expect(updates.filter((response) => response.status >= 300).map((response) => response.body)).toEqual([]);
    const { body: merged } = await partner.get(`/accounts/${target}`);
    expect(Object.keys(merged.metadata)).toHaveLength(20);

    const live = await readModel();
    await system.rebuildReadModels();
    expect(await readModel()).toEqual(live);
    // The API keeps working on the swapped-in schema, and the live projector keeps projecting into it.
    const after = await partner.post('/accounts', { name: 'After rebuild' });
    expect((await partner.get(`/accounts/${after.body.id}`)).status).toBe(200);
  });

  it('holds records that any Confluent-compatible consumer decodes against the registry', async () => {
    const { body: account } = await partner.post('/accounts', { name: 'Replayable', metadata: { a: 1 } });
    await partner.patch(`/accounts/${account.id}`, { name: 'Replayable 2' });

    // A consumer that shares no code with us: plain kafkajs and the registry client's defaults.
    const registry = new SchemaRegistry({ host: system.env.config.SCHEMA_REGISTRY_URL });
    const kafka = createKafka(system.env.config.KAFKA_BROKERS, 'independent-reader');
    const consumer = kafka.consumer({ groupId: `${system.env.config.TOPIC_PREFIX}independent-reader` });
    const decoded: { type: string; account_id: string | null; data: Record<string, unknown> }[] = [];
    await consumer.connect();
    await consumer.subscribe({ topic: system.services.topics.account, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        expect(message.value?.readUInt8(0)).toBe(0); // the Confluent magic byte
        decoded.push(await registry.decode(message.value!));
      },
    });
    try {
      const mine = await eventually(async () => {
        const records = decoded.filter((record) => record.account_id === account.id);
        return records.length === 2 ? records : undefined;
      });
      expect(mine.map((record) => record.type)).toEqual(['account.created', 'account.updated']);
      expect(mine[0]!.data).toMatchObject({ name: 'Replayable', metadata: { a: 1 }, slug: 'replayable' });
      expect(mine[1]!.data).toEqual({ name: 'Replayable 2' });
    } finally {
      await consumer.disconnect();
    }
  });
});
