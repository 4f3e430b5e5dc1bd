import { randomBytes } from 'node:crypto';
import { parseTopicName, topicNames, type EventCodec } from '@leadline/events';
import type { Consumer, IHeaders, Producer } from 'kafkajs';
import type { TopicOffsets } from '../db/schema';
import { createEventProducer, logCompression, partitionForKey } from '../kafka';
import type { LogGeneration } from '../log-generations';
import type { LogTransform } from '../log-transforms';
import { chunksOf, ORIGIN_HEADER, type ChunkRow } from './copy-chunks';
import { offsetsOf, slot } from './offsets';
import type { MigrateLogDeps } from './options';

export interface Mirror {
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

interface SourceMessage {
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers?: IHeaders;
  timestamp: string;
}

/** What the copy writes with, and where. */
interface CopyTarget {
  deps: MigrateLogDeps;
  target: LogGeneration;
  codec: EventCodec;
  transform: LogTransform;
  /** Records an interrupted run wrote without recording them, as `<topic>:<partition>:<offset>`. */
  alreadyCopied: ReadonlySet<string>;
  producer: Producer;
}

/** How far each source partition is copied, by `slot`; a partition seen for the first time starts at 0. */
async function loadProgress(
  deps: MigrateLogDeps,
  sourceTopics: readonly string[],
  target: LogGeneration,
): Promise<Map<string, bigint>> {
  for (const topic of sourceTopics) {
    for (const { partition } of await offsetsOf(deps.admin, topic)) {
      await deps.db
        .insertInto('log_copy_progress')
        .values({ generation: target.generation, topic, partition, next_offset: '0' })
        .onConflict((oc) => oc.columns(['generation', 'topic', 'partition']).doNothing())
        .execute();
    }
  }
  const rows = await deps.db
    .selectFrom('log_copy_progress')
    .selectAll()
    .where('generation', '=', target.generation)
    .execute();
  return new Map(rows.map((row) => [slot(row.topic, row.partition), BigInt(row.next_offset)]));
}

/** A record's value through the transform; refused when the transform rewrites and it does not decode. */
async function rewrite({ codec, transform }: CopyTarget, origin: string, value: Buffer): Promise<Buffer> {
  if (!transform.apply) return value;
  let event;
  try {
    event = await codec.decode(value);
  } catch (error) {
    if (transform.undecodable === 'copy') return value;
    throw new Error(
      `migrate-log: ${origin} does not decode (${(error as Error).message}); the ${transform.name} transform copies no record it cannot read`,
      { cause: error },
    );
  }
  return codec.encode(await transform.apply(event));
}

/**
 * Copies a run of one source partition's records to the new generation, then records where each
 * landed and the partition's progress in one transaction. Returns how many records it wrote.
 */
async function copyRun(
  copyTarget: CopyTarget,
  topic: string,
  partition: number,
  messages: readonly SourceMessage[],
): Promise<number> {
  const { deps, target, alreadyCopied, producer } = copyTarget;
  const kind = parseTopicName(topic)!.kind;
  const targetTopic = topicNames(deps.prefix, target.generation)[kind];
  const count = target.partitions[kind];
  const out = [];
  for (const message of messages) {
    const origin = `${topic}:${partition}:${message.offset}`;
    if (alreadyCopied.has(origin)) continue;
    const key = message.key?.toString() ?? null;
    out.push({
      source: { topic, partition, offset: message.offset },
      message: {
        key: message.key,
        value:
          message.value &&
          (await rewrite(copyTarget, `${topic}[${partition}]@${message.offset}`, message.value)),
        headers: { ...message.headers, [ORIGIN_HEADER]: origin },
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
    for (const [targetPartition, entries] of Map.groupBy(out, (entry) => entry.message.partition)) {
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
  await deps.db.transaction().execute(async (trx) => {
    if (chunks.length > 0) await trx.insertInto('log_copy_chunks').values(chunks).execute();
    await trx
      .updateTable('log_copy_progress')
      .set({ next_offset: next.toString() })
      .where('generation', '=', target.generation)
      .where('topic', '=', topic)
      .where('partition', '=', partition)
      .execute();
  });
  return out.length;
}

/** Waiting on the copy's progress: woken at each change, and at once when the copy fails. */
function progressWatch(progress: ReadonlyMap<string, bigint>) {
  let failure: Error | undefined;
  const listeners = new Set<() => void>();
  const changed = () => listeners.forEach((listener) => listener());
  return {
    changed,
    failed: () => failure !== undefined,
    fail(error: Error) {
      failure = error;
      changed();
    },
    reached(ends: TopicOffsets, deadline: number) {
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
  };
}

/**
 * The copy: a consumer of the old generation that writes each batch to the new one, then records where
 * each record landed and how far it has read, in one transaction. It follows the old generation as it
 * grows until the cutover has read its end. Any failure stops it (a request whose outcome is unknown
 * is sorted out by the next run, from the records themselves).
 */
export async function startMirror(
  deps: MigrateLogDeps,
  source: LogGeneration,
  target: LogGeneration,
  codec: EventCodec,
  transform: LogTransform,
  alreadyCopied: ReadonlySet<string>,
  batchRecords: number,
): Promise<Mirror> {
  const sourceTopics = Object.values(topicNames(deps.prefix, source.generation));
  const progress = await loadProgress(deps, sourceTopics, target);
  const watch = progressWatch(progress);
  let limits: Map<string, bigint> | undefined;
  const paused = new Set<string>();
  let copied = 0;

  const producer = createEventProducer(deps.kafka);
  await producer.connect();
  const copyTarget: CopyTarget = { deps, target, codec, transform, alreadyCopied, producer };
  const groupId = `${deps.prefix}leadline.log-migration.g${target.generation}.${randomBytes(4).toString('hex')}`;
  const consumer: Consumer = deps.kafka.consumer({
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

  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
      if (watch.failed() || !isRunning() || isStale() || batch.messages.length === 0) return;
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
          const run = copyable.slice(from, from + batchRecords);
          copied += await copyRun(copyTarget, batch.topic, batch.partition, run);
          progress.set(key, BigInt(run.at(-1)!.offset) + 1n);
          await heartbeat();
        }
      } catch (error) {
        watch.fail(error as Error);
        return;
      }
      if (copyable.length < fresh.length) {
        // Past the end the cutover read: nothing more is copied unless the cutover gives up.
        consumer.pause([{ topic: batch.topic, partitions: [batch.partition] }]);
        paused.add(key);
      } else resolveOffset(batch.lastOffset());
      watch.changed();
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
    reached: watch.reached,
    copied: () => copied,
    async stop() {
      await consumer.disconnect();
      await producer.disconnect();
      await deps.admin.deleteGroups([groupId]).catch(() => undefined);
    },
  };
}
