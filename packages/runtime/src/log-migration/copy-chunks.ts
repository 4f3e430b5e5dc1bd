import { topicNames } from '@leadline/events';
import type { IHeaders } from 'kafkajs';
import { sql } from 'kysely';
import type { LogGeneration } from '../log-generations';
import { readLogRanges } from '../log-reader';
import { offsetsOf } from './offsets';
import type { MigrateLogDeps } from './options';

/** The header naming where a copied record came from: `<topic>:<partition>:<offset>`. */
export const ORIGIN_HEADER = 'leadline-origin';

const parseOrigin = (headers: IHeaders | undefined) => {
  const value = headers?.[ORIGIN_HEADER]?.toString();
  const match = value ? /^(.+):(\d+):(\d+)$/.exec(value) : null;
  if (!match) return undefined;
  return { topic: match[1]!, partition: Number(match[2]), offset: match[3]! };
};

export interface ChunkRow {
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
export function chunksOf(
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
export async function recoverUnrecorded(deps: MigrateLogDeps, target: LogGeneration): Promise<Set<string>> {
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
