import { randomUUID } from 'node:crypto';
import { projections, startProjector } from '@leadline/projector';
import type { DomainEvent, NewEvent } from '@leadline/events';
import {
  advanceCheckpoint,
  CheckpointBehindError,
  createDb,
  freshRecords,
  partitionForKey,
  passedOverRuns,
  startLogConsumer,
  type PositionedEvent,
} from '@leadline/runtime';
import { eventually } from '@leadline/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSystem, type TestSystem } from '../../../system-test/system';

let system: TestSystem;

beforeAll(async () => {
  // The test runs the projector itself, when it wants.
  system = await startSystem({ projector: false, projectionWaitMs: 200 });
});
afterAll(() => system?.close());

const created = (name: string): NewEvent => ({
  type: 'account.created',
  data: {
    name,
    company_name: name,
    slug: name.toLowerCase(),
    phone_number: '+15550000000',
    phone_number_provisioned: false,
    forwarding_number: null,
    branding: { logo_url: null, accent_color: null },
    metadata: {},
  },
});
const append = (accountId: string, name: string) =>
  system.services.commands.append({
    stream: { topic: 'account', accountId },
    context: { partnerId: 'partner', actor: { kind: 'system', service: 'test' }, correlationId: 'c' },
    events: [created(name)],
  });

async function runProjector(onCrash: (error: Error) => void = () => undefined) {
  const db = createDb(system.env.config.DATABASE_URL, { maxConnections: 2 });
  const projector = await startProjector({
    ...system.services,
    db,
    groupId: system.projectorGroupId,
    projections,
    onCrash,
  });
  return {
    async stop() {
      await projector.stop();
      await db.destroy();
    },
  };
}

const accountNamed = (name: string) =>
  system.services.db.selectFrom('accounts').select('id').where('name', '=', name).executeTakeFirst();

/**
 * A log consumer in a group of its own (on the AI agent's checkpoint table: no agent runs in this
 * system) that acts on the accounts created with a name starting `prefix`, passing over every batch
 * without one: `act` is given each such name once, in the transaction that moves the checkpoint. It
 * starts at the log's end, as a consumer deployed now: the records before are other tests', some
 * deleted by the gap test before any consumer of this table applied them (reading from before them is
 * that test's error, not the caller's).
 */
async function startActingOn(group: string, prefix: string, act: (name: string) => Promise<void> | void) {
  const { admin, db, topics } = system.services;
  const ends = await admin.fetchTopicOffsets(topics.account);
  await db
    .insertInto('ai_agent_checkpoints')
    .values(
      ends.map(({ partition, high }) => ({
        topic: topics.account,
        partition,
        next_offset: high,
        updated_at: new Date(),
      })),
    )
    .onConflict((oc) =>
      oc
        .columns(['topic', 'partition'])
        .doUpdateSet((eb) => ({ next_offset: eb.ref('excluded.next_offset') })),
    )
    .execute();
  const groupId = `${system.env.config.TOPIC_PREFIX}${group}-${randomUUID()}`;
  const consumerDb = createDb(system.env.config.DATABASE_URL, { maxConnections: 2 });
  const consumer = await startLogConsumer({
    ...system.services,
    db: consumerDb,
    groupId,
    topics: [system.services.topics.account],
    checkpoints: 'ai_agent_checkpoints',
    actsOn: (event) => event.type === 'account.created' && event.data.name.startsWith(prefix),
    handleBatch: (topic, partition, records) =>
      consumerDb.transaction().execute(async (trx) => {
        const now = new Date();
        const fresh = await freshRecords(trx, 'ai_agent_checkpoints', topic, partition, records, now);
        for (const { event } of fresh) {
          if (event?.type === 'account.created' && event.data.name.startsWith(prefix))
            await act(event.data.name);
        }
        await advanceCheckpoint(trx, 'ai_agent_checkpoints', topic, partition, records.at(-1)!.offset, now);
      }),
  });
  return {
    groupId,
    async stop() {
      await consumer.stop();
      await consumerDb.destroy();
    },
  };
}

describe('where the log consumer continues', () => {
  it("from PostgreSQL's checkpoint even when Kafka's committed offset is ahead of it (a restore, a failover)", async () => {
    for (const index of [1, 2, 3]) await append(`acc-ahead-${index}`, `Ahead ${index}`);
    const topic = system.services.topics.account;
    const offsets = await system.services.admin.fetchTopicOffsets(topic);
    // Kafka says everything was consumed; PostgreSQL has applied nothing.
    await system.services.admin.setOffsets({
      groupId: system.projectorGroupId,
      topic,
      partitions: offsets.map(({ partition, high }) => ({ partition, offset: high })),
    });
    const projector = await runProjector();
    try {
      for (const index of [1, 2, 3])
        await eventually(async () => ((await accountNamed(`Ahead ${index}`)) ? true : undefined));
    } finally {
      await projector.stop();
    }
  });

  it("from PostgreSQL's checkpoint when PostgreSQL goes back under a running consumer (a restore)", async () => {
    const topic = system.services.topics.account;
    const count = (await system.services.admin.fetchTopicOffsets(topic)).length;
    const partition = partitionForKey(topic, 'acc-restored', count);
    const projector = await runProjector();
    try {
      for (const index of [1, 2]) await append('acc-restored', `Restored ${index}`);
      // account.created of an existing id keeps the first name: the account reads `Restored 1`.
      await eventually(async () => {
        const { db } = system.services;
        const checkpoint = await db
          .selectFrom('projection_checkpoints')
          .select('next_offset')
          .where('topic', '=', topic)
          .where('partition', '=', partition)
          .executeTakeFirst();
        const high = (await system.services.admin.fetchTopicOffsets(topic)).find(
          (entry) => entry.partition === partition,
        )!.high;
        return checkpoint?.next_offset === high && (await accountNamed('Restored 1')) ? true : undefined;
      });
      // PostgreSQL is restored from a backup taken before those records were applied; the consumer,
      // still running, has already fetched past them.
      const { db } = system.services;
      const before = await db
        .selectFrom('projection_checkpoints')
        .select('next_offset')
        .where('topic', '=', topic)
        .where('partition', '=', partition)
        .executeTakeFirstOrThrow();
      await db.transaction().execute(async (trx) => {
        await trx.deleteFrom('accounts').where('id', '=', 'acc-restored').execute();
        await trx
          .updateTable('projection_checkpoints')
          .set({ next_offset: String(BigInt(before.next_offset) - 2n) })
          .where('topic', '=', topic)
          .where('partition', '=', partition)
          .execute();
      });
      await append('acc-restored', 'Restored 3');
      // The records the restore took away are applied again, not skipped: the account is back as it
      // was (skipping them would have created it from the last record, as `Restored 3`).
      await eventually(async () => ((await accountNamed('Restored 1')) ? true : undefined));
      const checkpoint = await db
        .selectFrom('projection_checkpoints')
        .select('next_offset')
        .where('topic', '=', topic)
        .where('partition', '=', partition)
        .executeTakeFirstOrThrow();
      expect(BigInt(checkpoint.next_offset)).toBe(BigInt(before.next_offset) + 1n);
    } finally {
      await projector.stop();
    }
  });

  /**
   * A consumer that acts on accounts named "Acted on …", and its checkpoint and the log's end on the
   * partition of `accountId`.
   */
  async function startPassingOver(accountId: string) {
    const { admin, topics } = system.services;
    const topic = topics.account;
    const partition = partitionForKey(topic, accountId, (await admin.fetchTopicOffsets(topic)).length);
    const actedOn: string[] = [];
    const consumer = await startActingOn('passing-over', 'Acted on', (name) => void actedOn.push(name));
    const checkpointOf = async () =>
      (
        await system.services.db
          .selectFrom('ai_agent_checkpoints')
          .select('next_offset')
          .where('topic', '=', topic)
          .where('partition', '=', partition)
          .executeTakeFirst()
      )?.next_offset;
    const highOf = async () =>
      (await admin.fetchTopicOffsets(topic)).find((entry) => entry.partition === partition)!.high;
    return {
      topic,
      partition,
      actedOn,
      checkpointOf,
      caughtUp: () =>
        eventually(async () => ((await checkpointOf()) === (await highOf()) ? true : undefined)),
      stop: consumer.stop,
    };
  }

  it('past a batch it does not act on only when the batch continues from its checkpoint (a restore)', async () => {
    const { db } = system.services;
    const consumer = await startPassingOver('acc-passed');
    const { topic, partition, actedOn, checkpointOf } = consumer;
    try {
      await append('acc-passed', 'Acted on 1');
      await consumer.caughtUp();
      expect(actedOn).toEqual(['Acted on 1']);

      // PostgreSQL goes back to before that record; the consumer's next batch holds nothing it acts on
      // and starts past the checkpoint. Moving the checkpoint over it would skip "Acted on 1" for good.
      await db
        .updateTable('ai_agent_checkpoints')
        .set({ next_offset: String(BigInt((await checkpointOf())!) - 1n) })
        .where('topic', '=', topic)
        .where('partition', '=', partition)
        .execute();
      await append('acc-passed', 'Passed over');
      await consumer.caughtUp();
      expect(actedOn).toEqual(['Acted on 1', 'Acted on 1']);
    } finally {
      await consumer.stop();
    }
  });

  it('writes a run of passed-over batches once, with the next batch handled or when flushed, and reads a run behind its checkpoint again', async () => {
    const { db } = system.services;
    const table = 'ai_agent_checkpoints';
    const topic = `passed-over-${randomUUID()}`;
    await db
      .insertInto(table)
      .values({ topic, partition: 0, next_offset: '10', updated_at: new Date() })
      .execute();
    const checkpoint = async () =>
      (await db.selectFrom(table).select('next_offset').where('topic', '=', topic).executeTakeFirstOrThrow())
        .next_offset;
    const records = (...offsets: number[]): PositionedEvent[] =>
      offsets.map((offset) => ({ offset: String(offset), key: 'acc', value: null, event: undefined }));
    const handle = (batch: PositionedEvent[]) =>
      db.transaction().execute((trx) => freshRecords(trx, table, topic, 0, batch, new Date()));
    const seekedBack: string[] = [];
    const runs = passedOverRuns({
      db,
      table,
      flushMs: 60_000,
      seekBack: async () => {
        seekedBack.push(await checkpoint());
      },
    });

    // Two batches passed over: nothing written yet.
    await runs.add(topic, 0, records(10, 11));
    await runs.add(topic, 0, records(12));
    expect(await checkpoint()).toBe('10');
    // The next batch, on its own, starts past the checkpoint; as continuing the run, it is handled.
    await expect(handle(records(13))).rejects.toBeInstanceOf(CheckpointBehindError);
    const fresh = await handle(runs.continuing(topic, 0, records(13)));
    expect(fresh.map((record) => record.offset)).toEqual(['13']);

    // Flushed, the run moves the checkpoint past it in one write.
    await runs.flush(true);
    expect(await checkpoint()).toBe('13');
    // A run that starts past the checkpoint (a restore put it back) is not written: it is read again.
    await runs.add(topic, 0, records(20));
    await runs.flush(true);
    expect(await checkpoint()).toBe('13');
    expect(seekedBack).toEqual(['13']);
  });

  it('moves past the batches it passes over with the next batch it acts on, or on its own once they are due', async () => {
    const consumer = await startPassingOver('acc-runs');
    try {
      // A run of batches passed over, then one acted on: acted on once, the checkpoint past them all.
      for (let i = 0; i < 4; i++) await append('acc-runs', `Passed ${i}`);
      await append('acc-runs', 'Acted on 2');
      await consumer.caughtUp();
      expect(consumer.actedOn).toEqual(['Acted on 2']);
      // Then only batches passed over, and the partition goes quiet: the checkpoint still reaches the end.
      for (let i = 0; i < 3; i++) await append('acc-runs', `Passed again ${i}`);
      await consumer.caughtUp();
      expect(consumer.actedOn).toEqual(['Acted on 2']);
    } finally {
      await consumer.stop();
    }
  });

  it('past offsets that hold no record to apply (a transaction marker), without calling them a gap', async () => {
    const { kafka, codec, topics } = system.services;
    // Another producer of the topic (a connector, a migration tool) writing in a transaction: Kafka
    // puts a commit marker after its records, an offset no consumer ever sees.
    const producer = kafka.producer({
      transactionalId: `${system.env.config.TOPIC_PREFIX}importer`,
      idempotent: true,
      maxInFlightRequests: 1,
    });
    await producer.connect();
    const crashes: Error[] = [];
    const projector = await runProjector((error) => crashes.push(error));
    try {
      const [event] = await append('acc-tx-probe', 'Tx probe');
      const transaction = await producer.transaction();
      await transaction.send({
        topic: topics.account,
        messages: [
          {
            key: 'acc-tx',
            value: await codec.encode({
              ...event!,
              id: randomUUID(),
              account_id: 'acc-tx',
              data: created('Tx 1').data,
            } as DomainEvent),
          },
        ],
      });
      await transaction.commit();
      await eventually(async () => ((await accountNamed('Tx 1')) ? true : undefined));
      // The next record comes after the marker: the consumer carries on from its checkpoint.
      await append('acc-tx', 'Tx 1 again');
      await append('acc-tx-2', 'Tx 2');
      const partition = partitionForKey(
        topics.account,
        'acc-tx',
        (await system.services.admin.fetchTopicOffsets(topics.account)).length,
      );
      await eventually(async () => {
        const high = (await system.services.admin.fetchTopicOffsets(topics.account)).find(
          (entry) => entry.partition === partition,
        )!.high;
        const checkpoint = await system.services.db
          .selectFrom('projection_checkpoints')
          .select('next_offset')
          .where('topic', '=', topics.account)
          .where('partition', '=', partition)
          .executeTakeFirst();
        return checkpoint?.next_offset === high ? true : undefined;
      });
      await eventually(async () => ((await accountNamed('Tx 2')) ? true : undefined));
      expect(crashes).toEqual([]);
    } finally {
      await projector.stop();
      await producer.disconnect();
    }
  });

  it('stops with a clear error when records it never applied are no longer in the log', async () => {
    const topic = system.services.topics.account;
    const count = (await system.services.admin.fetchTopicOffsets(topic)).length;
    const partition = partitionForKey(topic, 'acc-gone', count);
    for (const index of [1, 2, 3]) await append('acc-gone', `Gone ${index}`);
    const high = (await system.services.admin.fetchTopicOffsets(topic)).find(
      (entry) => entry.partition === partition,
    )!.high;
    // Records nobody applied are deleted from the log (retention, a mistaken purge).
    await system.services.admin.deleteTopicRecords({ topic, partitions: [{ partition, offset: high }] });
    await append('acc-gone', 'Gone 4');

    const crashes: Error[] = [];
    const projector = await runProjector((error) => crashes.push(error));
    try {
      // kafkajs retries a failing batch a few times before the consumer crashes.
      const gap = await eventually(
        async () => crashes.find((error) => /never applied and are no longer in the log/.test(error.message)),
        {
          timeoutMs: 120_000,
        },
      );
      expect(gap.message).toMatch(/offsets 0 to \d+ were never applied/);
      expect(await accountNamed('Gone 4')).toBeUndefined();
    } finally {
      await projector.stop();
    }
  });
});

describe('a log consumer busy with one long batch', () => {
  it('stays in its group past the session timeout: the batch is handled once and no rebalance follows', async () => {
    const { admin } = system.services;
    const accountId = `acc-long-${randomUUID()}`;
    const handled: string[] = [];
    const { groupId, stop } = await startActingOn('long-batch', 'Long ', async (name) => {
      handled.push(name);
      // The first record's batch waits longer than the consumers' 6 s session timeout (a command
      // waiting for the projector through a broker's failover, say).
      if (handled.length === 1) await new Promise((resolve) => setTimeout(resolve, 9_000));
    });
    const membersOf = async () => {
      const {
        groups: [group],
      } = await admin.describeGroups([groupId]);
      return group!.state === 'Stable' ? group!.members.map((member) => member.memberId) : undefined;
    };
    try {
      const before = await eventually(membersOf, { message: 'the consumer never joined its group' });
      await append(accountId, 'Long 1');
      await eventually(async () => (handled.length === 1 ? true : undefined));
      await append(accountId, 'Long 2');
      await eventually(async () => (handled.length === 2 ? true : undefined), { timeoutMs: 30_000 });
      // Had its session expired during the long batch, the group would have dropped it and it would
      // have joined again as a new member.
      expect(await membersOf()).toEqual(before);
      expect(handled).toEqual(['Long 1', 'Long 2']);
    } finally {
      await stop();
    }
  }, 60_000);
});
