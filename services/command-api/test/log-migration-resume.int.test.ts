import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { topicNames } from '@leadline/events';
import { createEventProducer, ORIGIN_HEADER, partitionForKey, readGenerations } from '@leadline/runtime';
import { eventually } from '@leadline/test-kit';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';
import { rawRecordsOf, type RawRecord } from './log-migration-system';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
let system: TestSystem;
const children: ChildProcess[] = [];

beforeAll(async () => {
  system = await startSystem({ inboundDecider: false });
}, 120_000);
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await system?.close();
});

/** `npm run migrate-log` as an operator runs it, in its own process, on this file's environment. */
function migrateLogCommand(...args: string[]) {
  const { config } = system.env;
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'packages/runtime/src/migrate-log-cli.ts', ...args],
    {
      cwd: repoRoot,
      env: {
        ...process.env,
        DATABASE_URL: config.DATABASE_URL,
        KAFKA_BROKERS: config.KAFKA_BROKERS.join(','),
        SCHEMA_REGISTRY_URL: config.SCHEMA_REGISTRY_URL,
        TOPIC_PREFIX: config.TOPIC_PREFIX,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  children.push(child);
  const output: string[] = [];
  child.stdout!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output, exited };
}

const recordsOf = (topic: string) => rawRecordsOf(system.services, topic);

const copiedRecords = async () => {
  const { rows } = await sql<{ copied: string }>`
    select coalesce(sum(next_offset), 0)::text as copied from log_copy_progress where generation = 2`.execute(
    system.services.db,
  );
  return BigInt(rows[0]!.copied);
};

describe('an interrupted migration of the log', () => {
  it('resumes a copy killed part-way through, and copies every record exactly once, in order per account', async () => {
    const prefix = system.env.config.TOPIC_PREFIX;
    const [oldTopics, newTopics] = [topicNames(prefix, 1), topicNames(prefix, 2)];
    const partner = partnerClient(system.app, await system.createPartner('Resume CRM'));
    const accounts: string[] = [];
    for (let account = 0; account < 4; account++) {
      accounts.push((await partner.post('/accounts', { name: `Resume ${account}` })).body.id);
    }
    await Promise.all(
      accounts.map(async (account, index) => {
        for (let batch = 0; batch < 4; batch++) {
          const leads = Array.from({ length: 1000 }, (_, n) => ({
            phone: `+1512${550 + index}${String(batch * 1000 + n).padStart(4, '0')}`,
          }));
          expect((await partner.post(`/accounts/${account}/leads/bulk`, { leads })).status).toBe(200);
        }
      }),
    );
    const old = [...(await recordsOf(oldTopics.account)), ...(await recordsOf(oldTopics.partner))];

    // Killed while it copies: some records copied, not all, nothing switched.
    const first = migrateLogCommand('--partitions', '32', '--batch-records', '200');
    await eventually(async () => ((await copiedRecords()) > 0n ? true : undefined), {
      timeoutMs: 120_000,
      intervalMs: 10,
      message: `the copy never started:\n${first.output.join('')}`,
    });
    first.child.kill('SIGKILL');
    await first.exited;
    const copiedWhenKilled = await copiedRecords();
    expect(copiedWhenKilled).toBeLessThan(BigInt(old.length));
    expect((await readGenerations(system.services.db)).map((g) => g.state)).toEqual(['active', 'migrating']);

    // A request the broker took whose answer never came back (the kill can land there too): records on
    // the new generation that the copy never recorded.
    const { rows: progress } = await sql<{ topic: string; partition: number; next_offset: string }>`
      select topic, partition, next_offset::text from log_copy_progress
      where generation = 2 and topic = ${oldTopics.account} order by partition`.execute(system.services.db);
    const behind = progress.find(
      (row) =>
        old.filter((record) => record.topic === row.topic && record.partition === row.partition).length >
        Number(row.next_offset) + 10,
    )!;
    const onNew = new Set((await recordsOf(newTopics.account)).map((copy) => copy.origin));
    const unrecorded = old
      .filter((record) => record.topic === behind.topic && record.partition === behind.partition)
      .filter((record) => BigInt(record.offset) >= BigInt(behind.next_offset))
      .filter((record) => !onNew.has(`${record.topic}:${record.partition}:${record.offset}`))
      .slice(0, 10);
    expect(unrecorded).toHaveLength(10);
    const producer = createEventProducer(system.services.kafka);
    await producer.connect();
    await producer.send({
      topic: newTopics.account,
      acks: -1,
      messages: unrecorded.map((record) => ({
        key: record.key,
        value: record.value,
        partition: partitionForKey(newTopics.account, record.key, 32),
        headers: {
          'event-type': 'x',
          [ORIGIN_HEADER]: `${record.topic}:${record.partition}:${record.offset}`,
        },
      })),
    });
    await producer.disconnect();

    // Run again: it finishes the copy and cuts over.
    const second = migrateLogCommand('--partitions', '32', '--batch-records', '200');
    const code = await second.exited;
    expect(code, second.output.join('')).toBe(0);
    expect((await readGenerations(system.services.db)).map((g) => g.state)).toEqual(['draining', 'active']);

    // Every record of the old generation is on the new one exactly once, each account's in order.
    const copies = [...(await recordsOf(newTopics.account)), ...(await recordsOf(newTopics.partner))];
    const origins = copies.map((copy) => copy.origin);
    expect(new Set(origins).size).toBe(copies.length);
    expect(new Set(origins)).toEqual(
      new Set(old.map((record) => `${record.topic}:${record.partition}:${record.offset}`)),
    );
    const sequence = (records: RawRecord[], origin: (record: RawRecord) => string) => {
      const byKey = new Map<string, string[]>();
      for (const record of records) byKey.set(record.key, [...(byKey.get(record.key) ?? []), origin(record)]);
      return byKey;
    };
    expect(sequence(copies, (copy) => copy.origin!)).toEqual(
      sequence(old, (record) => `${record.topic}:${record.partition}:${record.offset}`),
    );
    expect(second.output.join('')).toMatch(/interrupted run copied without recording them/);
    // The recorded mapping finds each record's copy.
    const { rows: mapped } = await sql<{ records: string; distinct_records: string }>`
      select count(*)::text as records, count(distinct (source_topic, source_partition, offset_))::text as distinct_records
      from log_copy_chunks, unnest(source_offsets) as offset_ where generation = 2`.execute(
      system.services.db,
    );
    expect(mapped[0]).toEqual({ records: String(old.length), distinct_records: String(old.length) });

    // The live projector moved over and writes go to the new generation, read back at once.
    const account = accounts[0]!;
    const after = await partner.post(`/accounts/${account}/leads`, { phone: '+15125599999', name: 'After' });
    expect(after.status).toBe(201);
    expect((await partner.get(`/accounts/${account}/leads/%2B15125599999`)).body.name).toBe('After');
    const fresh = (await recordsOf(newTopics.account)).filter((record) => record.origin === undefined);
    expect(fresh.length).toBeGreaterThan(0);
    console.warn(
      `interrupted migration: ${old.length} records; killed with ${copiedWhenKilled} read, ${unrecorded.length} written unrecorded; resumed to ${copies.length} copies, none twice`,
    );
  }, 600_000);
});
