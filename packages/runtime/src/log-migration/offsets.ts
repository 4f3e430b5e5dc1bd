import type { Admin } from 'kafkajs';
import pRetry from 'p-retry';
import type { TopicOffsets } from '../db/schema';

/** A source partition's name in the copy's maps. */
export const slot = (topic: string, partition: number) => `${topic}\u0000${partition}`;

/**
 * A topic's partitions and their ends. Tried again on a retriable error: the broker answers "not the
 * leader" for a moment after a topic is created, until the client's metadata catches up.
 */
export async function offsetsOf(admin: Admin, topic: string) {
  return pRetry(() => admin.fetchTopicOffsets(topic), {
    retries: 5,
    minTimeout: 200,
    shouldRetry: ({ error }) => (error as { retriable?: boolean }).retriable === true,
  });
}

/** Each partition's end (its high watermark), by topic. */
export async function endsOf(admin: Admin, topics: readonly string[]): Promise<TopicOffsets> {
  const ends: TopicOffsets = {};
  for (const topic of topics) {
    const offsets = await offsetsOf(admin, topic);
    ends[topic] = offsets.sort((a, b) => a.partition - b.partition).map((entry) => entry.high);
  }
  return ends;
}

export const sameOffsets = (a: TopicOffsets, b: TopicOffsets) => JSON.stringify(a) === JSON.stringify(b);
