import { randomBytes } from 'node:crypto';
import type { LogDurability } from './log-durability';
import {
  createEventCodec,
  createSchemaRegistry,
  parseTopicName,
  topicNames,
  type EventCodec,
  type TopicKind,
} from '@leadline/events';
import kafkajs, { type Admin, type Consumer, type IHeaders, type Kafka, type Producer } from 'kafkajs';
import { sql, type Kysely } from 'kysely';
import pRetry from 'p-retry';
import { READ_MODEL_SCHEMA } from './db/database';
import type { Database, TopicOffsets } from './db/schema';
import {
  createEventProducer,
  ensureTopics,
  logCompression,
  makeTopicsReadOnly,
  messageLimits,
  partitionForKey,
  restoreMessageLimits,
} from './kafka';
import { LOG_FENCE_LOCK, offsetIn, readGenerations, type LogGeneration } from './log-generations';
import { checkpointConsumers, type CheckpointTable } from './log-records';
import { readLogRanges } from './log-reader';
import { identityTransform, type LogTransform } from './log-transforms';
import type { PersonalDataKeys } from './personal-data/keys';
import { createPersonalDataSealer } from './personal-data/sealer';

const { AssignerProtocol } = kafkajs;

/**
 * `npm run migrate-log`: moves the log to a new generation of topics (see log-generations.ts and the
 * README, "Migrating the log to a new generation"). The history is copied record by record, in order
 * per partition, into the new partition count with the producers' partitioner, through a transform;
 * where each record landed is recorded (`log_copy_chunks`), so positions on the old generation can be
 * translated. A brief write fence then lets the copy reach the old generation's final end, producers
 * switch, and each consumer moves over once it has read the old generation to that end. Every step is
 * idempotent and its progress is in Postgres: a run that is interrupted is run again.
 */

/** The header naming where a copied record came from: `<topic>:<partition>:<offset>`. */
export const ORIGIN_HEADER = 'leadline-origin';

export interface MigrateLogDeps {
  /** With no statement timeout: the fence waits on a lock for as long as `fenceWaitMs`. */
  db: Kysely<Database>;
  kafka: Kafka;
  admin: Admin;
  schemaRegistryUrl: string;
  /**
   * Open and seal personal data when a transform rewrites records (a transform sees values in clear,
   * and what it writes is sealed again). Every process has them (`connectInfrastructure`).
   */
  personalDataKeys: PersonalDataKeys;
  /** The environment's topic prefix (`TOPIC_PREFIX`). */
  prefix: string;
  /** Replication and `min.insync.replicas` of the new generation's topics; 1 and 1 by default. */
  durability?: LogDurability;
  log?: (message: string) => void;
}

export interface MigrateLogOptions {
  /** Partitions of the new generation's account topic. */
  partitions: number;
  /** Partitions of its partner topic; as many as now by default. */
  partnerPartitions?: number;
  transform?: LogTransform;
  /** The copy starts the cutover once fewer records than this are left to copy (1,000 by default). */
  cutoverLagRecords?: number;
  /**
   * Bound on waiting, with the fence up, for the appends in flight to finish (10 s by default): past
   * it the fence comes down, nothing changed, and the cutover is tried again (three times in all).
   */
  fenceWaitMs?: number;
  /** Bound on copying the rest of the old generation with the fence up (30 s by default). */
  tailCopyMs?: number;
  /** Records per copy request (2,000 by default). */
  batchRecords?: number;
}

export interface MigrationReport {
  from: number;
  to: number;
  /** Records copied by this run. */
  copied: number;
  /** How long writes were fenced at the cutover, waiting for the appends in flight included. */
  fenceMs: number;
}

const slot = (topic: string, partition: number) => `${topic}\u0000${partition}`;

/**
 * A topic's partitions and their ends. Tried again on a retriable error: the broker answers "not the
 * leader" for a moment after a topic is created, until the client's metadata catches up.
 */
async function offsetsOf(admin: Admin, topic: string) {
  return pRetry(() => admin.fetchTopicOffsets(topic), {
    retries: 5,
    minTimeout: 200,
    shouldRetry: ({ error }) => (error as { retriable?: boolean }).retriable === true,
  });
}

/** Each partition's end (its high watermark), by topic. */
async function endsOf(admin: Admin, topics: readonly string[]): Promise<TopicOffsets> {
  const ends: TopicOffsets = {};
  for (const topic of topics) {
    const offsets = await offsetsOf(admin, topic);
    ends[topic] = offsets.sort((a, b) => a.partition - b.partition).map((entry) => entry.high);
  }
  return ends;
}

const sameOffsets = (a: TopicOffsets, b: TopicOffsets) => JSON.stringify(a) === JSON.stringify(b);

/** The migration under way, or a new one from the active generation. */
async function openMigration(
  deps: MigrateLogDeps,
  options: MigrateLogOptions,
  transform: LogTransform,
): Promise<{ source: LogGeneration; target: LogGeneration }> {
  const generations = await readGenerations(deps.db);
  const source = generations.find((generation) => generation.state === 'active')!;
  const draining = generations.find((generation) => generation.state === 'draining');
  const underway = generations.find((generation) => generation.state === 'migrating');
  const partitions = {
    account: options.partitions,
    partner: options.partnerPartitions ?? source.partitions.partner,
  };
  if (underway) {
    if (
      underway.partitions.account !== partitions.account ||
      underway.partitions.partner !== partitions.partner ||
      underway.transform !== transform.name
    ) {
      throw new Error(
        `migrate-log: a migration to generation ${underway.generation} (${underway.partitions.account} account partitions, ${underway.partitions.partner} partner partitions, transform ${underway.transform}) is under way: run it again with those settings, or --abort it`,
      );
    }
    return { source, target: underway };
  }
  if (
    partitions.account === source.partitions.account &&
    partitions.partner === source.partitions.partner &&
    !transform.apply
  ) {
    // Most likely a run repeated after it succeeded: a copy would change nothing.
    throw new Error(
      `migrate-log: generation ${source.generation} already has ${partitions.account} account and ${partitions.partner} partner partitions; nothing to do`,
    );
  }
  if (draining) {
    throw new Error(
      `migrate-log: generation ${draining.generation} is still being drained by its consumers; retire it first (npm run migrate-log -- --retire)`,
    );
  }
  const generation = Math.max(...generations.map((candidate) => candidate.generation)) + 1;
  await deps.db
    .insertInto('log_generations')
    .values({
      generation,
      partitions: JSON.stringify(partitions),
      state: 'migrating',
      transform: transform.name,
    })
    .execute();
  return {
    source,
    target: {
      generation,
      partitions,
      state: 'migrating',
      transform: transform.name,
      startOffsets: null,
      endOffsets: null,
    },
  };
}

/**
 * Writes resume where a run that died with the fence up left the old generation read-only: its topics
 * get their limits back before anything else.
 */
async function liftLeftoverFence(deps: MigrateLogDeps, target: number) {
  const row = await deps.db
    .selectFrom('log_generations')
    .select('write_protected')
    .where('generation', '=', target)
    .executeTakeFirstOrThrow();
  if (!row.write_protected) return;
  deps.log?.('an earlier run stopped with its fence up: the old generation takes writes again');
  await restoreMessageLimits(deps.admin, new Map(Object.entries(row.write_protected)));
  await deps.db
    .updateTable('log_generations')
    .set({ write_protected: null, fenced_at: null })
    .where('generation', '=', target)
    .execute();
}

/** Makes the new generation's topics, or checks the ones an earlier run made. */
async function prepareTopics(deps: MigrateLogDeps, target: LogGeneration) {
  const topics = topicNames(deps.prefix, target.generation);
  await ensureTopics(deps.admin, topics, {
    partitions: target.partitions,
    ...(deps.durability && { durability: deps.durability }),
  });
  for (const kind of Object.keys(topics) as TopicKind[]) {
    const count = (await offsetsOf(deps.admin, topics[kind])).length;
    if (count !== target.partitions[kind]) {
      throw new Error(
        `migrate-log: ${topics[kind]} has ${count} partitions, not the ${target.partitions[kind]} of generation ${target.generation}`,
      );
    }
  }
}

const parseOrigin = (headers: IHeaders | undefined) => {
  const value = headers?.[ORIGIN_HEADER]?.toString();
  const match = value ? /^(.+):(\d+):(\d+)$/.exec(value) : null;
  if (!match) return undefined;
  return { topic: match[1]!, partition: Number(match[2]), offset: match[3]! };
};

interface ChunkRow {
  generation: number;
  source_topic: string;
  source_partition: number;
  source_first: string;
  source_last: string;
  target_topic: string;
  target_partition: number;
  target_first: string;
  source_offsets: string[];
}

/** Runs of records copied one after another from one source partition to one target partition. */
function chunksOf(
  generation: number,
  targetTopic: string,
  targetPartition: number,
  copies: readonly { offset: bigint; source: { topic: string; partition: number; offset: string } }[],
): ChunkRow[] {
  const chunks: ChunkRow[] = [];
  let current: ChunkRow | undefined;
  let expected = -1n;
  for (const copy of copies) {
    if (
      !current ||
      current.source_topic !== copy.source.topic ||
      current.source_partition !== copy.source.partition ||
      copy.offset !== expected
    ) {
      current = {
        generation,
        source_topic: copy.source.topic,
        source_partition: copy.source.partition,
        source_first: copy.source.offset,
        source_last: copy.source.offset,
        target_topic: targetTopic,
        target_partition: targetPartition,
        target_first: copy.offset.toString(),
        source_offsets: [],
      };
      chunks.push(current);
    }
    current.source_offsets.push(copy.source.offset);
    if (BigInt(copy.source.offset) < BigInt(current.source_first)) current.source_first = copy.source.offset;
    if (BigInt(copy.source.offset) > BigInt(current.source_last)) current.source_last = copy.source.offset;
    expected = copy.offset + 1n;
  }
  return chunks;
}

/**
 * What an interrupted run wrote to the new generation without recording it (it records each request
 * once the broker acknowledged it): read back from the records themselves (their origin header) and
 * recorded now, so the copy does not write them again.
 */
async function recoverUnrecorded(deps: MigrateLogDeps, target: LogGeneration): Promise<Set<string>> {
  const copied = new Set<string>();
  for (const topic of Object.values(topicNames(deps.prefix, target.generation))) {
    const { rows } = await sql<{ partition: number; next: string }>`
      select target_partition as partition, max(target_first + cardinality(source_offsets))::text as next
      from log_copy_chunks where generation = ${target.generation} and target_topic = ${topic}
      group by target_partition`.execute(deps.db);
    const recorded = new Map(rows.map((row) => [row.partition, BigInt(row.next)]));
    const ranges = new Map(
      (await offsetsOf(deps.admin, topic)).map((entry) => [
        entry.partition,
        { from: recorded.get(entry.partition) ?? 0n, to: BigInt(entry.high) },
      ]),
    );
    const found = new Map<
      number,
      { offset: bigint; source: { topic: string; partition: number; offset: string } }[]
    >();
    await readLogRanges(deps.kafka, deps.admin, topic, ranges, (partition, message) => {
      const source = parseOrigin(message.headers);
      if (!source)
        throw new Error(`migrate-log: ${topic}[${partition}]@${message.offset} has no ${ORIGIN_HEADER}`);
      const list = found.get(partition) ?? [];
      found.set(partition, list);
      list.push({ offset: BigInt(message.offset), source });
      copied.add(`${source.topic}:${source.partition}:${source.offset}`);
    });
    const chunks = [...found].flatMap(([partition, copies]) =>
      chunksOf(target.generation, topic, partition, copies),
    );
    if (chunks.length > 0) await deps.db.insertInto('log_copy_chunks').values(chunks).execute();
  }
  if (copied.size > 0)
    deps.log?.(`found ${copied.size} records an interrupted run copied without recording them`);
  return copied;
}

interface Mirror {
  /** How far each source partition is copied: the next offset to copy. */
  progress: Map<string, bigint>;
  /** Copies nothing at or past these offsets until `clearLimits`. */
  setLimits(limits: TopicOffsets): void;
  clearLimits(): void;
  /** Resolves once every partition is copied up to `ends`; rejects past `deadline` or when the copy fails. */
  reached(ends: TopicOffsets, deadline: number): Promise<void>;
  copied(): number;
  stop(): Promise<void>;
}

/**
 * The copy: a consumer of the old generation that writes each batch to the new one, then records where
 * each record landed and how far it has read, in one transaction. It follows the old generation as it
 * grows until the cutover has read its end. Any failure stops it (a request whose outcome is unknown
 * is sorted out by the next run, from the records themselves).
 */
async function startMirror(
  deps: MigrateLogDeps,
  source: LogGeneration,
  target: LogGeneration,
  codec: EventCodec,
  transform: LogTransform,
  alreadyCopied: ReadonlySet<string>,
  batchRecords: number,
): Promise<Mirror> {
  const { db, kafka } = deps;
  const sourceTopics = Object.values(topicNames(deps.prefix, source.generation));
  const targetTopics = topicNames(deps.prefix, target.generation);
  const progress = new Map<string, bigint>();
  for (const topic of sourceTopics) {
    for (const { partition } of await offsetsOf(deps.admin, topic)) {
      await db
        .insertInto('log_copy_progress')
        .values({ generation: target.generation, topic, partition, next_offset: '0' })
        .onConflict((oc) => oc.columns(['generation', 'topic', 'partition']).doNothing())
        .execute();
    }
  }
  const rows = await db
    .selectFrom('log_copy_progress')
    .selectAll()
    .where('generation', '=', target.generation)
    .execute();
  for (const row of rows) progress.set(slot(row.topic, row.partition), BigInt(row.next_offset));

  let limits: Map<string, bigint> | undefined;
  const paused = new Set<string>();
  let failure: Error | undefined;
  let copied = 0;
  const listeners = new Set<() => void>();
  const changed = () => listeners.forEach((listener) => listener());

  const producer: Producer = createEventProducer(kafka);
  await producer.connect();
  const groupId = `${deps.prefix}leadline.log-migration.g${target.generation}.${randomBytes(4).toString('hex')}`;
  const consumer: Consumer = kafka.consumer({
    groupId,
    allowAutoTopicCreation: false,
    maxBytesPerPartition: 4 << 20,
  });
  await consumer.connect();
  await consumer.subscribe({ topics: sourceTopics, fromBeginning: true });
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    for (const [topic, partitions] of Object.entries(payload.memberAssignment)) {
      for (const partition of partitions) {
        consumer.seek({ topic, partition, offset: (progress.get(slot(topic, partition)) ?? 0n).toString() });
      }
    }
  });

  async function rewrite(topic: string, partition: number, offset: string, value: Buffer): Promise<Buffer> {
    if (!transform.apply) return value;
    let event;
    try {
      event = await codec.decode(value);
    } catch (error) {
      if (transform.undecodable === 'copy') return value;
      throw new Error(
        `migrate-log: ${topic}[${partition}]@${offset} does not decode (${(error as Error).message}); the ${transform.name} transform copies no record it cannot read`,
        { cause: error },
      );
    }
    return codec.encode(await transform.apply(event));
  }

  async function copy(
    topic: string,
    partition: number,
    messages: {
      offset: string;
      key: Buffer | null;
      value: Buffer | null;
      headers?: IHeaders;
      timestamp: string;
    }[],
  ) {
    const kind = parseTopicName(topic)!.kind;
    const targetTopic = targetTopics[kind];
    const count = target.partitions[kind];
    const out = [];
    for (const message of messages) {
      if (alreadyCopied.has(`${topic}:${partition}:${message.offset}`)) continue;
      const key = message.key?.toString() ?? null;
      out.push({
        source: { topic, partition, offset: message.offset },
        message: {
          key: message.key,
          value: message.value && (await rewrite(topic, partition, message.offset, message.value)),
          headers: { ...message.headers, [ORIGIN_HEADER]: `${topic}:${partition}:${message.offset}` },
          timestamp: message.timestamp,
          // A key's records go where producers will put its new ones: the same partitioner and count.
          partition: key === null ? partition % count : partitionForKey(targetTopic, key, count),
        },
      });
    }
    const chunks: ChunkRow[] = [];
    if (out.length > 0) {
      const bytes = out.reduce((sum, { message }) => sum + 64 + (message.value?.length ?? 0), 0);
      const metadata = await producer.sendBatch({
        acks: -1,
        compression: logCompression(bytes),
        topicMessages: [{ topic: targetTopic, messages: out.map(({ message }) => message) }],
      });
      const byPartition = new Map<number, typeof out>();
      for (const entry of out) {
        const list = byPartition.get(entry.message.partition) ?? [];
        byPartition.set(entry.message.partition, list);
        list.push(entry);
      }
      for (const [targetPartition, entries] of byPartition) {
        const base = metadata.find((entry) => entry.partition === targetPartition)?.baseOffset;
        if (base === undefined || base === null)
          throw new Error('migrate-log: the broker acknowledged no offset');
        chunks.push(
          ...chunksOf(
            target.generation,
            targetTopic,
            targetPartition,
            entries.map((entry, index) => ({ offset: BigInt(base) + BigInt(index), source: entry.source })),
          ),
        );
      }
    }
    const next = BigInt(messages.at(-1)!.offset) + 1n;
    await db.transaction().execute(async (trx) => {
      if (chunks.length > 0) await trx.insertInto('log_copy_chunks').values(chunks).execute();
      await trx
        .updateTable('log_copy_progress')
        .set({ next_offset: next.toString() })
        .where('generation', '=', target.generation)
        .where('topic', '=', topic)
        .where('partition', '=', partition)
        .execute();
    });
    progress.set(slot(topic, partition), next);
    copied += out.length;
  }

  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
      if (failure || !isRunning() || isStale() || batch.messages.length === 0) return;
      const key = slot(batch.topic, batch.partition);
      const next = progress.get(key) ?? 0n;
      const limit = limits?.get(key);
      const fresh = batch.messages.filter((message) => BigInt(message.offset) >= next);
      const copyable =
        limit === undefined ? fresh : fresh.filter((message) => BigInt(message.offset) < limit);
      try {
        // Offsets without records (none on this log) are told apart from a fetch that started too far.
        const fetchedFrom = (batch as typeof batch & { fetchedOffset?: string }).fetchedOffset;
        if (
          copyable[0] &&
          BigInt(copyable[0].offset) > next &&
          BigInt(fetchedFrom ?? copyable[0].offset) > next
        ) {
          consumer.seek({ topic: batch.topic, partition: batch.partition, offset: next.toString() });
          return;
        }
        for (let from = 0; from < copyable.length; from += batchRecords) {
          await copy(batch.topic, batch.partition, copyable.slice(from, from + batchRecords));
          await heartbeat();
        }
      } catch (error) {
        failure = error as Error;
        changed();
        return;
      }
      if (copyable.length < fresh.length) {
        // Past the end the cutover read: nothing more is copied unless the cutover gives up.
        consumer.pause([{ topic: batch.topic, partitions: [batch.partition] }]);
        paused.add(key);
      } else resolveOffset(batch.lastOffset());
      changed();
    },
  });

  return {
    progress,
    setLimits(ends) {
      limits = new Map(
        Object.entries(ends).flatMap(([topic, offsets]) =>
          offsets.map((offset, partition) => [slot(topic, partition), BigInt(offset)] as const),
        ),
      );
    },
    clearLimits() {
      limits = undefined;
      for (const key of paused) {
        const [topic, partition] = key.split('\u0000') as [string, string];
        consumer.seek({ topic, partition: Number(partition), offset: progress.get(key)!.toString() });
        consumer.resume([{ topic, partitions: [Number(partition)] }]);
      }
      paused.clear();
    },
    reached(ends, deadline) {
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(check, Math.max(0, deadline - Date.now()));
        function check() {
          if (failure) return done(failure);
          const behind = Object.entries(ends).some(([topic, offsets]) =>
            offsets.some(
              (offset, partition) => (progress.get(slot(topic, partition)) ?? 0n) < BigInt(offset),
            ),
          );
          if (!behind) return done();
          if (Date.now() >= deadline)
            return done(new Error('migrate-log: the copy did not reach the end in time'));
        }
        function done(error?: Error) {
          clearTimeout(timer);
          listeners.delete(check);
          if (error) reject(error);
          else resolve();
        }
        listeners.add(check);
        check();
      });
    },
    copied: () => copied,
    async stop() {
      await consumer.disconnect();
      await producer.disconnect();
      await deps.admin.deleteGroups([groupId]).catch(() => undefined);
    },
  };
}

const LOCK_NOT_AVAILABLE = '55P03';

class FenceNotTaken extends Error {}

/**
 * The cutover, with the write fence up: producers are refused (commands) or wait (facts); the old
 * generation is made read-only at the broker, so its end, read next, is final; the copy reaches that
 * end; the old generation stops and the new one becomes active, in one transaction; the fence comes
 * down. Anything failing before the switch leaves producers on the old generation, as they were.
 */
async function cutover(
  deps: MigrateLogDeps,
  source: LogGeneration,
  target: LogGeneration,
  mirror: Mirror,
  options: { fenceWaitMs: number; tailCopyMs: number },
): Promise<{ fenceMs: number; ends: TopicOffsets; starts: TopicOffsets }> {
  const { db, admin } = deps;
  const sourceTopics = Object.values(topicNames(deps.prefix, source.generation));
  const targetTopics = Object.values(topicNames(deps.prefix, target.generation));
  return db.connection().execute(async (connection) => {
    const raised = Date.now();
    await sql`select set_config('lock_timeout', ${`${options.fenceWaitMs}ms`}, false)`.execute(connection);
    try {
      // Waits for the appends holding the fence; meanwhile new ones are refused (or wait, facts).
      await sql`select pg_advisory_lock(${LOG_FENCE_LOCK})`.execute(connection);
    } catch (error) {
      if ((error as { code?: string }).code !== LOCK_NOT_AVAILABLE) throw error;
      throw new FenceNotTaken(
        `appends in flight did not finish within ${options.fenceWaitMs} ms; the fence came down and nothing changed`,
      );
    } finally {
      await sql`reset lock_timeout`.execute(connection);
    }
    let switched = false;
    let limits: Map<string, string> | undefined;
    try {
      limits = await messageLimits(admin, sourceTopics);
      // Recorded before the topics change, so a run that dies now gives them back when run again.
      await db
        .updateTable('log_generations')
        .set({ fenced_at: new Date(), write_protected: JSON.stringify(Object.fromEntries(limits)) })
        .where('generation', '=', target.generation)
        .execute();
      await makeTopicsReadOnly(admin, sourceTopics);
      const ends = await endsOf(admin, sourceTopics);
      mirror.setLimits(ends);
      await mirror.reached(ends, Date.now() + options.tailCopyMs);
      if (!sameOffsets(ends, await endsOf(admin, sourceTopics))) {
        throw new Error('migrate-log: records landed on the old generation after it was made read-only');
      }
      const starts = await endsOf(admin, targetTopics);
      await db.transaction().execute(async (trx) => {
        const now = new Date();
        await trx
          .updateTable('log_generations')
          .set({ state: 'draining', end_offsets: JSON.stringify(ends) })
          .where('generation', '=', source.generation)
          .execute();
        await trx
          .updateTable('log_generations')
          .set({
            state: 'active',
            start_offsets: JSON.stringify(starts),
            activated_at: now,
            write_protected: null,
          })
          .where('generation', '=', target.generation)
          .execute();
      });
      switched = true;
      return { fenceMs: Date.now() - raised, ends, starts };
    } finally {
      if (!switched) {
        mirror.clearLimits();
        if (limits) {
          await restoreMessageLimits(admin, limits);
          await db
            .updateTable('log_generations')
            .set({ fenced_at: null, write_protected: null })
            .where('generation', '=', target.generation)
            .execute();
        }
      }
      await sql`select pg_advisory_unlock(${LOG_FENCE_LOCK})`.execute(connection);
    }
  });
}

/** Records of the old generation not yet copied. */
async function copyLag(admin: Admin, mirror: Mirror, topics: readonly string[]) {
  let lag = 0n;
  for (const [topic, offsets] of Object.entries(await endsOf(admin, topics))) {
    offsets.forEach((end, partition) => {
      const left = BigInt(end) - (mirror.progress.get(slot(topic, partition)) ?? 0n);
      if (left > 0n) lag += left;
    });
  }
  return lag;
}

/**
 * Copies the active generation into a new one and cuts producers over to it (see the module's
 * comment). Resumes a migration that an earlier run left under way.
 */
export async function migrateLog(deps: MigrateLogDeps, options: MigrateLogOptions): Promise<MigrationReport> {
  const log = deps.log ?? (() => undefined);
  const transform = options.transform ?? identityTransform;
  const { source, target } = await openMigration(deps, options, transform);
  log(
    `generation ${source.generation} -> ${target.generation}: ${target.partitions.account} account partitions, ${target.partitions.partner} partner partitions, transform ${transform.name}`,
  );
  await liftLeftoverFence(deps, target.generation);
  await prepareTopics(deps, target);
  // The new topics' subjects (TopicRecordNameStrategy), for analysts and the transform's encoding.
  const codec = await createEventCodec(
    createSchemaRegistry(deps.schemaRegistryUrl),
    topicNames(deps.prefix, target.generation),
    createPersonalDataSealer(deps.personalDataKeys),
  );
  const alreadyCopied = await recoverUnrecorded(deps, target);
  const sourceTopics = Object.values(topicNames(deps.prefix, source.generation));
  const mirror = await startMirror(
    deps,
    source,
    target,
    codec,
    transform,
    alreadyCopied,
    options.batchRecords ?? 2_000,
  );
  try {
    const cutoverLag = BigInt(options.cutoverLagRecords ?? 1_000);
    for (let lastReport = 0; ;) {
      const lag = await copyLag(deps.admin, mirror, sourceTopics);
      if (lag <= cutoverLag) break;
      if (Date.now() - lastReport > 5_000) {
        log(`copying: ${mirror.copied()} records copied, ${lag} left`);
        lastReport = Date.now();
      }
      const ends = await endsOf(deps.admin, sourceTopics);
      // Waits for the copy to reach the end as it was a moment ago (it keeps following after that).
      await mirror.reached(ends, Date.now() + 5_000).catch((error: Error) => {
        if (/in time/.test(error.message)) return;
        throw error;
      });
    }
    log('cutting over: writes are fenced');
    for (let attempt = 1; ; attempt++) {
      try {
        const { fenceMs } = await cutover(deps, source, target, mirror, {
          fenceWaitMs: options.fenceWaitMs ?? 10_000,
          tailCopyMs: options.tailCopyMs ?? 30_000,
        });
        log(
          `generation ${target.generation} is active; writes were fenced for ${fenceMs} ms; consumers move over once each has read generation ${source.generation} to its end`,
        );
        return { from: source.generation, to: target.generation, copied: mirror.copied(), fenceMs };
      } catch (error) {
        if (!(error instanceof FenceNotTaken) || attempt >= 3) throw error;
        log(`cutover: ${error.message}; trying again`);
      }
    }
  } finally {
    await mirror.stop();
  }
}

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
