import type { DomainEvent, EventData, EventType } from '@leadline/events';
import {
  connectInfrastructure,
  createEventProducer,
  newUuid,
  partitionForKey,
  type Infrastructure,
} from '@leadline/runtime';
import { createTestEnvironment, type TestEnvironment } from '@leadline/test-kit';
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyBatch } from '../src/apply-batch';
import { projections } from '../src/projections';
import { rebuild } from '../src/rebuild';

let env: TestEnvironment;
let infrastructure: Infrastructure;
let producer: Producer;

beforeAll(async () => {
  env = await createTestEnvironment();
  infrastructure = await connectInfrastructure(env.config, 'leadline-log-order-test');
  producer = createEventProducer(infrastructure.kafka);
  await producer.connect();
});
afterAll(async () => {
  await producer?.disconnect();
  await infrastructure?.close();
  await env?.dispose();
});

const accountId = newUuid();
let second = 0;

function event<T extends EventType>(type: T, data: EventData<T>): DomainEvent {
  return {
    id: newUuid(),
    type,
    version: 1,
    account_id: accountId,
    partner_id: 'partner-under-test',
    occurred_at: new Date(Date.UTC(2026, 0, 1, 0, 0, second++)).toISOString(),
    actor: { kind: 'system', service: 'test' },
    correlation_id: 'test',
    causation_id: null,
    data,
  } as DomainEvent;
}

const lead = (index: number) => ({ lead_id: `lead-${index}`, phone: `+1512555010${index}` });

const created = (index: number) =>
  event('lead.created', {
    ...lead(index),
    name: null,
    first_name: `First ${index}`,
    last_name: 'Last',
    email: null,
    company: null,
    notes: null,
    source: null,
    external_id: null,
    property_address: null,
    metadata: {},
    status: 'new',
    auto_sequence: false,
    origin: 'api',
  });
const collected = (index: number) =>
  event('checklist.item_collected', {
    ...lead(index),
    lead_name: `First ${index} Last`,
    requirement_id: 'req-email',
    requirement_name: 'Email',
    requirement_type: 'email',
    value: `lead${index}@example.com`,
    document: null,
    message_id: null,
    checklist_progress: 1,
    completed_items: 1,
    total_items: 1,
  });
const updated = (index: number) => event('lead.updated', { ...lead(index), changes: { company: 'Renamed' } });
const deleted = (index: number) => event('lead.deleted', lead(index));

async function readModels() {
  const { db } = infrastructure;
  return {
    leads: await db
      .selectFrom('leads')
      .select(['id', 'phone', 'name', 'first_name', 'company', 'status'])
      .where('account_id', '=', accountId)
      .orderBy('id')
      .execute(),
    checklist: await db
      .selectFrom('lead_checklist_items')
      .select(['lead_id', 'requirement_id', 'value'])
      .where('account_id', '=', accountId)
      .orderBy('lead_id')
      .execute(),
  };
}

describe('a batch with a lead deleted and the same lead changed', () => {
  it('is applied in log order, and a rebuild from the log reproduces it', async () => {
    const events = [
      event('account.created', {
        name: 'Order Co',
        company_name: 'Order Co',
        slug: 'order-co',
        phone_number: '+15550000001',
        phone_number_provisioned: true,
        forwarding_number: null,
        branding: { logo_url: null, accent_color: null },
        metadata: {},
      }),
      created(1),
      created(2),
      created(3),
      // Lead 1: changed (a checklist item, a field), then deleted.
      collected(1),
      updated(1),
      deleted(1),
      // Lead 2: deleted, then changes that arrive after it.
      deleted(2),
      updated(2),
      // Lead 3 stays: its item and change are kept.
      collected(3),
      updated(3),
    ];
    const topic = infrastructure.topics.account;
    const partitions = (await infrastructure.admin.fetchTopicOffsets(topic)).length;
    const partition = partitionForKey(topic, accountId, partitions);
    const messages = await Promise.all(
      events.map(async (entry) => ({ key: accountId, value: await infrastructure.codec.encode(entry) })),
    );
    const [sent] = await producer.send({ topic, acks: -1, messages });
    expect(sent!.partition).toBe(partition);
    const base = BigInt(sent!.baseOffset!);

    // The live projector's view: the whole append as one batch.
    await applyBatch(
      infrastructure.db,
      projections,
      topic,
      partition,
      events.map((entry, index) => ({ offset: String(base + BigInt(index)), event: entry })),
    );
    const live = await readModels();
    expect(live.leads.map((row) => [row.id, row.company])).toEqual([['lead-3', 'Renamed']]);
    expect(live.checklist).toEqual([
      { lead_id: 'lead-3', requirement_id: 'req-email', value: 'lead3@example.com' },
    ]);

    // The rebuild reads the same records from the log, in whatever batches Kafka hands over.
    await rebuild({
      ...infrastructure,
      databaseUrl: env.config.DATABASE_URL,
      groupPrefix: env.config.TOPIC_PREFIX,
      projections,
    });
    expect(await readModels()).toEqual(live);
  });
});
