import { parseTopicName, topicNames } from '@leadline/events';
import kafkajs, { type Admin } from 'kafkajs';
import { sql, type Kysely } from 'kysely';
import { READ_MODEL_SCHEMA } from '../db/database';
import type { Database } from '../db/schema';
import { offsetIn, readGenerations, type LogGeneration } from '../log-generations';
import { checkpointConsumers, type CheckpointTable } from '../log-records';
import { liftLeftoverFence } from './cutover';
import { offsetsOf } from './offsets';
import type { MigrateLogDeps } from './options';

const { AssignerProtocol } = kafkajs;

/** A consumer that keeps checkpoints in Postgres, where its table is. */
interface CheckpointedConsumer {
  name: string;
  table: string;
  schema: string;
}

async function checkpointedConsumers(db: Kysely<Database>): Promise<CheckpointedConsumer[]> {
  const { rows } = await sql<{ table_schema: string; table_name: string }>`
    select table_schema, table_name from information_schema.tables
    where table_name like '%\\_checkpoints' and table_schema in ('public', ${READ_MODEL_SCHEMA})
    order by table_schema, table_name`.execute(db);
  return rows.map((row) => ({
    name: checkpointConsumers[row.table_name as CheckpointTable] ?? row.table_name,
    table: row.table_name,
    schema: row.table_schema,
  }));
}

async function positionsOf(db: Kysely<Database>, consumer: CheckpointedConsumer) {
  const { rows } = await sql<{ topic: string; partition: number; next_offset: string }>`
    select topic, partition, next_offset::text from ${sql.table(`${consumer.schema}.${consumer.table}`)}`.execute(
    db,
  );
  return rows;
}

/** Which generation each consumer reads, and how many records it has left on it. */
async function consumerPositions(deps: MigrateLogDeps, generations: readonly LogGeneration[]) {
  const positions = [];
  for (const consumer of await checkpointedConsumers(deps.db)) {
    const rows = await positionsOf(deps.db, consumer);
    const generationOf = (topic: string) => parseTopicName(topic)?.generation;
    const newest = Math.max(0, ...rows.map((row) => generationOf(row.topic) ?? 0));
    const generation = generations.find((candidate) => candidate.generation === newest);
    let left = 0n;
    if (generation) {
      for (const row of rows.filter((candidate) => generationOf(candidate.topic) === newest)) {
        const end = generation.endOffsets
          ? offsetIn(generation.endOffsets, row.topic, row.partition)
          : BigInt(
              (await offsetsOf(deps.admin, row.topic)).find((entry) => entry.partition === row.partition)
                ?.high ?? '0',
            );
        if (end > BigInt(row.next_offset)) left += end - BigInt(row.next_offset);
      }
    }
    positions.push({ consumer, generation: generation?.generation, left });
  }
  return positions;
}

/** Consumer groups with members assigned partitions of `topics` (stock consumers, analysts' tools). */
async function groupsReading(admin: Admin, topics: readonly string[]) {
  const { groups } = await admin.listGroups();
  if (groups.length === 0) return [];
  const { groups: described } = await admin.describeGroups(groups.map((group) => group.groupId));
  return described.flatMap((group) => {
    const reading = new Set<string>();
    for (const member of group.members) {
      const decoded = AssignerProtocol.MemberAssignment.decode(member.memberAssignment);
      for (const topic of Object.keys(decoded?.assignment ?? {}))
        if (topics.includes(topic)) reading.add(topic);
    }
    return reading.size > 0 ? [{ groupId: group.groupId, topics: [...reading] }] : [];
  });
}

/**
 * `--retire`: deletes the drained generation's topics once nothing reads them: every consumer that
 * keeps checkpoints has moved on to a later generation, and no consumer group (a stock consumer, an
 * analyst's tool, a service not yet on checkpoints) still has members on them. Otherwise it refuses,
 * naming who is behind.
 */
export async function retireGeneration(
  deps: MigrateLogDeps,
): Promise<{ generation: number; topics: string[] }> {
  const generations = await readGenerations(deps.db);
  const draining = generations.find((generation) => generation.state === 'draining');
  if (!draining) {
    if ((await deleteRetiredTopics(deps)) > 0) {
      throw new Error(
        'migrate-log: no generation is waiting to be retired; deleted the topics an interrupted --retire left',
      );
    }
    throw new Error('migrate-log: no generation is waiting to be retired');
  }
  const topics = Object.values(topicNames(deps.prefix, draining.generation));
  const behind: string[] = [];
  for (const position of await consumerPositions(deps, generations)) {
    if (position.generation === draining.generation) {
      behind.push(
        `${position.consumer.name} (${position.consumer.schema}.${position.consumer.table}) is still on generation ${draining.generation}, ${position.left} records from its end`,
      );
    }
  }
  for (const group of await groupsReading(deps.admin, topics)) {
    behind.push(`consumer group ${group.groupId} still reads ${group.topics.join(', ')}`);
  }
  if (behind.length > 0) {
    throw new Error(
      `migrate-log: generation ${draining.generation} cannot be retired yet:\n  ${behind.join('\n  ')}`,
    );
  }
  // Retired first, deleted after: every process stops asking its Kafka clients about the topics once
  // it sees the state (it looks every 2 s), and a run interrupted in between deletes them when run again.
  await deps.db.transaction().execute(async (trx) => {
    await trx
      .updateTable('log_generations')
      .set({ state: 'retired', retired_at: new Date() })
      .where('generation', '=', draining.generation)
      .execute();
    // Positions on the retired generation are never translated again.
    await trx
      .deleteFrom('log_copy_chunks')
      .where('generation', '=', draining.generation + 1)
      .execute();
    await trx
      .deleteFrom('log_copy_progress')
      .where('generation', '=', draining.generation + 1)
      .execute();
  });
  await deleteRetiredTopics(deps);
  return { generation: draining.generation, topics };
}

/** Deletes what is left of retired generations' topics; how many there were. */
async function deleteRetiredTopics(deps: MigrateLogDeps): Promise<number> {
  const retired = (await readGenerations(deps.db)).filter((generation) => generation.state === 'retired');
  const existing = new Set(await deps.admin.listTopics());
  const present = retired
    .flatMap((generation) => Object.values(topicNames(deps.prefix, generation.generation)))
    .filter((topic) => existing.has(topic));
  if (present.length > 0) await deps.admin.deleteTopics({ topics: present });
  return present.length;
}

/** `--abort`: gives up a migration before its cutover: its topics and records go, writes carry on. */
export async function abortMigration(deps: MigrateLogDeps): Promise<number> {
  const underway = (await readGenerations(deps.db)).find((generation) => generation.state === 'migrating');
  if (!underway) throw new Error('migrate-log: no migration is under way');
  await liftLeftoverFence(deps, underway.generation);
  const topics = Object.values(topicNames(deps.prefix, underway.generation));
  const existing = new Set(await deps.admin.listTopics());
  const present = topics.filter((topic) => existing.has(topic));
  if (present.length > 0) await deps.admin.deleteTopics({ topics: present });
  await deps.db.transaction().execute(async (trx) => {
    await trx.deleteFrom('log_copy_chunks').where('generation', '=', underway.generation).execute();
    await trx.deleteFrom('log_copy_progress').where('generation', '=', underway.generation).execute();
    await trx.deleteFrom('log_generations').where('generation', '=', underway.generation).execute();
  });
  return underway.generation;
}

/** `--status`: the generations, the copy's progress and where each consumer is. */
export async function migrationStatus(deps: MigrateLogDeps): Promise<string[]> {
  const generations = await readGenerations(deps.db);
  const lines = generations.map(
    (generation) =>
      `generation ${generation.generation}: ${generation.state}, ${generation.partitions.account} account / ${generation.partitions.partner} partner partitions, transform ${generation.transform}` +
      (generation.state === 'retired'
        ? ''
        : `, topics ${Object.values(topicNames(deps.prefix, generation.generation)).join(', ')}`),
  );
  const underway = generations.find((generation) => generation.state === 'migrating');
  if (underway) {
    const rows = await deps.db
      .selectFrom('log_copy_progress')
      .selectAll()
      .where('generation', '=', underway.generation)
      .execute();
    let left = 0n;
    for (const row of rows) {
      const end = (await offsetsOf(deps.admin, row.topic)).find((entry) => entry.partition === row.partition);
      left += BigInt(end?.high ?? '0') - BigInt(row.next_offset);
    }
    lines.push(`copy into generation ${underway.generation}: ${left} records left to copy`);
  }
  for (const position of await consumerPositions(deps, generations)) {
    lines.push(
      `consumer ${position.consumer.name}: ${
        position.generation === undefined
          ? 'has read nothing yet'
          : `on generation ${position.generation}, ${position.left} records behind`
      }`,
    );
  }
  return lines;
}
