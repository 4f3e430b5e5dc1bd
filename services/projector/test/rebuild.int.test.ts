import type { DomainEvent } from '@leadline/events';
import {
  connectInfrastructure,
  createDb,
  createEventProducer,
  newUuid,
  READ_MODEL_SCHEMA,
  type Infrastructure,
} from '@leadline/runtime';
import { createTestEnvironment, eventually, type TestEnvironment } from '@leadline/test-kit';
import type { Producer } from 'kafkajs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APPLY_LOCK } from '../src/apply-batch';
import { projections } from '../src/projections';
import { startProjector, type RunningProjector } from '../src/projector';
import { rebuild, retiredSchemas, rollback } from '../src/rebuild';

let env: TestEnvironment;
let infrastructure: Infrastructure;
let producer: Producer;
let live: RunningProjector;

beforeAll(async () => {
  env = await createTestEnvironment();
  infrastructure = await connectInfrastructure(env.config, 'leadline-rebuild-test');
  producer = createEventProducer(infrastructure.kafka);
  await producer.connect();
  live = await startProjector({
    ...infrastructure,
    groupId: `${env.config.TOPIC_PREFIX}leadline.projector`,
    projections,
  });
});
afterAll(async () => {
  await live?.stop();
  await producer?.disconnect();
  await infrastructure?.close();
  await env?.dispose();
});

const deps = () => ({
  ...infrastructure,
  databaseUrl: env.config.DATABASE_URL,
  groupPrefix: env.config.TOPIC_PREFIX,
  projections,
});

async function createAccount(name: string) {
  const accountId = newUuid();
  const event = {
    id: newUuid(),
    type: 'account.created',
    version: 1,
    account_id: accountId,
    partner_id: 'partner-under-test',
    occurred_at: new Date().toISOString(),
    actor: { kind: 'system', service: 'test' },
    correlation_id: 'test',
    causation_id: null,
    data: {
      name,
      company_name: name,
      slug: name.toLowerCase().replace(/\W+/g, '-'),
      phone_number: '+15550000002',
      phone_number_provisioned: true,
      forwarding_number: null,
      branding: { logo_url: null, accent_color: null },
      metadata: {},
    },
  } as DomainEvent;
  await producer.send({
    topic: infrastructure.topics.account,
    acks: -1,
    messages: [{ key: accountId, value: await infrastructure.codec.encode(event) }],
  });
  // Read through the live name, as the API does: whichever schema carries it now.
  await eventually(async () => ((await nameOf(accountId)) ? true : undefined));
  return accountId;
}

const nameOf = async (accountId: string) =>
  (
    await infrastructure.db
      .selectFrom('accounts')
      .select('name')
      .where('id', '=', accountId)
      .executeTakeFirst()
  )?.name;

const schemas = async () =>
  (
    await sql<{ schema_name: string }>`
      select schema_name from information_schema.schemata where schema_name like 'read_model%' order by 1
    `.execute(infrastructure.db)
  ).rows.map((row) => row.schema_name);

describe('rebuilding the read models', () => {
  it('gives up within its bound when live batches hold the apply lock, and changes nothing', async () => {
    const first = await createAccount('Held Co');
    const before = await schemas();
    // A live batch that never ends, holding the apply lock every batch takes.
    const holder = createDb(env.config.DATABASE_URL, { maxConnections: 1 });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const holding = holder.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock_shared(${APPLY_LOCK})`.execute(trx);
      await released;
    });
    try {
      await expect(rebuild({ ...deps(), swapWaitMs: 500 })).rejects.toThrow(/held the apply lock/);
    } finally {
      release();
      await holding;
      await holder.destroy();
    }
    expect(await schemas()).toEqual(before);
    // The lock is free: the live projector goes on.
    const next = await createAccount('After Held Co');
    expect(await nameOf(first)).toBe('Held Co');
    expect(await nameOf(next)).toBe('After Held Co');
  });

  it('keeps the previous read models, and --rollback swaps them back, caught up with the log', async () => {
    const before = await createAccount('Before Co');
    // Something only the current read models hold, to tell them apart after the swaps.
    await sql`update ${sql.id(READ_MODEL_SCHEMA, 'accounts')} set name = 'Kept Co' where id = ${before}`.execute(
      infrastructure.db,
    );

    const rebuilt = await rebuild(deps());
    expect(await nameOf(before)).toBe('Before Co');
    expect(await retiredSchemas(infrastructure.db)).toContain(rebuilt.retired);

    const during = await createAccount('During Co');

    const back = await rollback(deps());
    expect(back.schema).toBe(rebuilt.retired);
    expect(await nameOf(before)).toBe('Kept Co');
    // The kept read models were brought up to the end of the log before they were swapped in.
    expect(await nameOf(during)).toBe('During Co');
    // The rebuilt ones are kept in turn: a second rollback would go forward again.
    expect(await retiredSchemas(infrastructure.db)).toContain(back.retired);

    // The live projector carries on into the restored read models.
    const after = await createAccount('After Co');
    expect(await nameOf(after)).toBe('After Co');
  });

  it('has nothing to go back to before any swap', async () => {
    const fresh = await createTestEnvironment();
    const other = await connectInfrastructure(fresh.config, 'leadline-rollback-test');
    try {
      await expect(
        rollback({
          ...other,
          databaseUrl: fresh.config.DATABASE_URL,
          groupPrefix: fresh.config.TOPIC_PREFIX,
          projections,
        }),
      ).rejects.toThrow(/no previous read models/);
    } finally {
      await other.close();
      await fresh.dispose();
    }
  });
});
