import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { DomainEvent, EventData, EventType } from '@leadline/events';
import { connectInfrastructure, createEventProducer, newUuid, type Infrastructure } from '@leadline/runtime';
import { createTestEnvironment, eventually, newLeadData, type TestEnvironment } from '@leadline/test-kit';
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyBatch } from '../src/apply-batch';
import { accountsProjection } from '../src/accounts/projection';
import { projections } from '../src/projections';

let env: TestEnvironment;
let infrastructure: Infrastructure;
let producer: Producer;

beforeAll(async () => {
  env = await createTestEnvironment();
  infrastructure = await connectInfrastructure(env.config, 'leadline-projector-test');
  producer = createEventProducer(infrastructure.kafka);
  await producer.connect();
});
afterAll(async () => {
  await producer?.disconnect();
  await infrastructure?.close();
  await env?.dispose();
});

const partnerId = 'partner-under-test';

function event<T extends EventType>(type: T, accountId: string, data: EventData<T>, second = 0): DomainEvent {
  return {
    id: newUuid(),
    type,
    version: 1,
    account_id: accountId,
    partner_id: partnerId,
    occurred_at: new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString(),
    actor: { kind: 'system', service: 'test' },
    correlation_id: 'test',
    causation_id: null,
    data,
  } as DomainEvent;
}

const accountCreated = (accountId: string, index: number) =>
  event(
    'account.created',
    accountId,
    {
      name: `Account ${index}`,
      company_name: `Account ${index}`,
      slug: `account-${index}`,
      phone_number: `+1555${String(index).padStart(7, '0')}`,
      phone_number_provisioned: true,
      forwarding_number: null,
      branding: { logo_url: null, accent_color: null },
      metadata: {},
    },
    index,
  );

const accountUpdated = (accountId: string, metadata: Record<string, unknown>) =>
  event('account.updated', accountId, { metadata });

async function snapshot() {
  const { db } = infrastructure;
  return {
    accounts: await db.selectFrom('accounts').selectAll().orderBy('id').execute(),
    checkpoints: await db
      .selectFrom('projection_checkpoints')
      .select(['topic', 'partition', 'next_offset'])
      .execute(),
  };
}

describe('applying batches', () => {
  it('applies a redelivered batch once: the checkpoint guard skips what was applied', async () => {
    const accountId = newUuid();
    const records = [
      { offset: '0', event: accountCreated(accountId, 1) },
      { offset: '1', event: accountUpdated(accountId, { visits: 1 }) },
    ];
    const topic = 'replay-test-topic';
    expect(await applyBatch(infrastructure.db, projections, topic, 0, records)).toBe(2);
    const once = await snapshot();
    expect(await applyBatch(infrastructure.db, projections, topic, 0, records)).toBe(0);
    expect(await snapshot()).toEqual(once);
    // A redelivery that overlaps the checkpoint applies only the new tail.
    const next = { offset: '2', event: accountUpdated(accountId, { visits: 2 }) };
    expect(await applyBatch(infrastructure.db, projections, topic, 0, [...records, next])).toBe(1);
    const row = await infrastructure.db
      .selectFrom('accounts')
      .selectAll()
      .where('id', '=', accountId)
      .executeTakeFirst();
    expect(row?.metadata).toEqual({ visits: 2 });
  });

  it('applies a run of lead updates in one statement, folding repeated changes of one lead in log order', async () => {
    const accountId = newUuid();
    const [first, second] = [newUuid(), newUuid()];
    const created = (leadId: string, phone: string) =>
      event('lead.created', accountId, {
        lead_id: leadId,
        phone,
        name: 'Before',
        first_name: null,
        last_name: null,
        email: 'before@example.com',
        company: null,
        notes: 'keep me',
        source: null,
        external_id: null,
        property_address: null,
        metadata: { keep: true, drop: 1 },
        status: 'new',
        auto_sequence: false,
        origin: 'api',
      });
    const update = (leadId: string, phone: string, changes: EventData<'lead.updated'>['changes']) =>
      event('lead.updated', accountId, { lead_id: leadId, phone, changes });
    const records = [
      created(first, '+15125550901'),
      created(second, '+15125550902'),
      update(first, '+15125550901', { name: 'Middle', metadata: { added: 1 } }),
      update(second, '+15125550902', { email: null, auto_sequence: true }),
      update(first, '+15125550901', { name: 'After', metadata: { added: null, drop: null } }),
    ].map((record, offset) => ({ offset: String(offset), event: record }));
    await applyBatch(infrastructure.db, projections, 'lead-update-runs', 0, records);
    const rows = await infrastructure.db
      .selectFrom('leads')
      .select(['id', 'name', 'email', 'notes', 'auto_sequence', 'metadata'])
      .where('id', 'in', [first, second])
      .execute();
    expect(rows.find((row) => row.id === first)).toMatchObject({
      name: 'After',
      email: 'before@example.com',
      notes: 'keep me',
      auto_sequence: false,
      metadata: { keep: true },
    });
    expect(rows.find((row) => row.id === second)).toMatchObject({
      name: 'Before',
      email: null,
      notes: 'keep me',
      auto_sequence: true,
      metadata: { keep: true, drop: 1 },
    });
  });

  it('applies a batch in log order: a lead deleted, then changed, then created again, in one batch', async () => {
    const accountId = newUuid();
    const [first, again] = [newUuid(), newUuid()];
    const phone = '+15125550911';
    const created = (leadId: string, name: string) =>
      event('lead.created', accountId, newLeadData({ lead_id: leadId, phone, name }));
    const records = [
      accountCreated(accountId, 91),
      created(first, 'First'),
      event('lead.deleted', accountId, { lead_id: first, phone }),
      // A change that arrives after the delete finds no lead and must not bring it back.
      event('lead.updated', accountId, { lead_id: first, phone, changes: { name: 'Ghost' } }),
      event('lead.status_changed', accountId, {
        lead_id: first,
        phone,
        previous_status: 'new',
        new_status: 'contacted',
      }),
      created(again, 'Again'),
    ].map((record, offset) => ({ offset: String(offset), event: record }));
    await applyBatch(infrastructure.db, projections, 'log-order', 0, records);
    const leads = await infrastructure.db
      .selectFrom('leads')
      .select(['id', 'name', 'status'])
      .where('account_id', '=', accountId)
      .execute();
    expect(leads).toEqual([{ id: again, name: 'Again', status: 'new' }]);
    const account = await infrastructure.db
      .selectFrom('accounts')
      .select('total_leads')
      .where('id', '=', accountId)
      .executeTakeFirstOrThrow();
    expect(account.total_leads).toBe(1);
  });

  it('has handlers that change nothing when the same events are applied twice', async () => {
    const accountId = newUuid();
    const events = [
      accountCreated(accountId, 2),
      accountUpdated(accountId, { plan: 'pro', legacy: null }),
      event('account.deactivated', accountId, {}),
      event('team_member.invited', accountId, {
        member_id: newUuid(),
        email: 'ana@example.com',
        name: 'Ana',
        role: 'member',
        phone_number: null,
        forwarding_number: null,
      }),
    ];
    const apply = () =>
      infrastructure.db.transaction().execute((trx) => accountsProjection.apply(trx, events));
    const read = async () => ({
      account: await infrastructure.db
        .selectFrom('accounts')
        .selectAll()
        .where('id', '=', accountId)
        .execute(),
      team: await infrastructure.db
        .selectFrom('team_members')
        .selectAll()
        .where('account_id', '=', accountId)
        .execute(),
    });
    await apply();
    const once = await read();
    expect(once.account[0]).toMatchObject({ status: 'deactivated', metadata: { plan: 'pro' } });
    expect(once.team).toHaveLength(1);
    await apply();
    expect(await read()).toEqual(once);
  });
});

describe('the projector process', () => {
  const projectorMain = fileURLToPath(new URL('../src/main.ts', import.meta.url));
  const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
  // One process (node with tsx's loader), so SIGKILL really kills the projector and not a wrapper.
  const startProcess = (): ChildProcess =>
    spawn(process.execPath, ['--import', 'tsx', projectorMain], {
      cwd: repoRoot,
      env: {
        ...process.env,
        DATABASE_URL: env.config.DATABASE_URL,
        KAFKA_BROKERS: env.config.KAFKA_BROKERS.join(','),
        SCHEMA_REGISTRY_URL: env.config.SCHEMA_REGISTRY_URL,
        TOPIC_PREFIX: env.config.TOPIC_PREFIX,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  const projected = async () =>
    Number(
      (
        await infrastructure.db
          .selectFrom('accounts')
          .select((eb) => eb.fn.countAll<string>().as('count'))
          .where('partner_id', '=', partnerId)
          .executeTakeFirstOrThrow()
      ).count,
    );

  it('killed with SIGKILL mid-stream and restarted, leaves no duplicate and no missing row', async () => {
    const total = 4000;
    const ids = Array.from({ length: total }, () => newUuid());
    const already = await projected();
    let projector = startProcess();
    try {
      // Appended in batches by key, as the command path does, while the projector is consuming.
      for (let start = 0; start < total; start += 200) {
        const batch = ids.slice(start, start + 200);
        await producer.sendBatch({
          acks: -1,
          topicMessages: [
            {
              topic: infrastructure.topics.account,
              messages: await Promise.all(
                batch.map(async (id, i) => ({
                  key: id,
                  value: await infrastructure.codec.encode(accountCreated(id, 10_000 + start + i)),
                })),
              ),
            },
          ],
        });
      }
      await eventually(async () => ((await projected()) > already + total / 10 ? true : undefined), {
        timeoutMs: 60_000,
        message: 'the projector never started applying',
      });
      projector.kill('SIGKILL');
      await new Promise((resolve) => projector.once('exit', resolve));
      const atKill = await projected();
      expect(atKill).toBeLessThan(already + total);

      projector = startProcess();
      await eventually(async () => ((await projected()) === already + total ? true : undefined), {
        timeoutMs: 60_000,
        message: 'the restarted projector did not apply every record',
      });
      const rows = await infrastructure.db
        .selectFrom('accounts')
        .select('id')
        .where('id', 'in', ids)
        .execute();
      expect(new Set(rows.map((row) => row.id))).toEqual(new Set(ids));

      const offsets = await infrastructure.admin.fetchTopicOffsets(infrastructure.topics.account);
      const { checkpoints } = await snapshot();
      for (const { partition, high } of offsets) {
        const checkpoint = checkpoints.find(
          (row) => row.topic === infrastructure.topics.account && row.partition === partition,
        );
        expect(checkpoint?.next_offset ?? '0').toBe(high);
      }
    } finally {
      if (projector.exitCode === null) {
        projector.kill('SIGKILL');
        await new Promise((resolve) => projector.once('exit', resolve));
      }
    }
  });
});
