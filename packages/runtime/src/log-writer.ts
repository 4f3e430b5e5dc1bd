import type { Message, Producer, RecordMetadata } from 'kafkajs';
import { logCompression, partitionForKey, type PartitionEnd } from './kafka';
import { EVENT_PRODUCER_DURABILITY } from './log-durability';

type TopicOffsets = PartitionEnd[];

/**
 * Concurrent high-watermark checks of one topic share one lookup (`LogEnds.of`). A caller may only use a
 * fetch that started after it asked (after it took its locks), so it sees every append the previous
 * holder of its locks made: a caller arriving while a fetch is in flight joins the next one, which
 * starts as soon as the current one ends. Under load, each topic has one fetch in flight and one
 * forming, whatever the number of commands.
 */
export function createOffsetsCoalescer(fetch: (topic: string) => Promise<TopicOffsets>) {
  const states = new Map<string, { inFlight?: Promise<TopicOffsets>; next?: Promise<TopicOffsets> }>();

  const start = (topic: string, state: { inFlight?: Promise<TopicOffsets> }) => {
    const fetching = fetch(topic);
    state.inFlight = fetching;
    const clear = () => {
      if (state.inFlight === fetching) state.inFlight = undefined;
    };
    fetching.then(clear, clear);
    return fetching;
  };

  return function freshOffsets(topic: string): Promise<TopicOffsets> {
    let state = states.get(topic);
    if (!state) states.set(topic, (state = {}));
    if (!state.inFlight) return start(topic, state);
    if (state.next) return state.next;
    const joined = state;
    const next = state.inFlight
      .catch(() => undefined)
      .then(() => {
        joined.next = undefined;
        return start(topic, joined);
      });
    joined.next = next;
    return next;
  };
}

/** What one command appends: its records, all with one key (so one partition). */
export interface AppendRequest {
  topic: string;
  key: string;
  messages: Message[];
  bytes: number;
}

/** Where a command's records landed: every record before `nextOffset` of the partition is its or older. */
export interface AppendPosition {
  topic: string;
  partition: number;
  nextOffset: bigint;
}

interface Pending extends AppendRequest {
  resolve: (position: AppendPosition) => void;
  reject: (error: Error) => void;
  partition?: number;
  cancelled: boolean;
}

/**
 * The most records one request takes from several commands (one command larger than this still goes
 * whole, alone). kafkajs 2.2.4 sorts a request's records into partitions by copying the partition's
 * array for every record it adds (`groupMessagesPerPartition`), time and garbage quadratic in the
 * records of one partition, on the event loop: 5,000 records take about 30 ms, 15,000 about 700 ms.
 * Sequencer commands of 1,000 steps (5,000 records) grouped by the byte limit alone put tens of
 * thousands of records in one request and stalled every other command of the process meanwhile.
 */
const MAX_GROUP_RECORDS = 5_000;

export interface GroupAppender {
  /**
   * Appends the records in the next request to the broker, beside those of every other command ready
   * at the same moment. `bounded` wraps the request (its deadline, its error mapping); a failed
   * request fails every command in it. `abandon` (for a caller past its own bound) removes records
   * not yet sent.
   */
  append(request: AppendRequest): { position: Promise<AppendPosition>; abandon: () => void };
  /** Disconnects its producers, including any still retrying a send nobody waits for. */
  close(): Promise<void>;
}

/**
 * The next request's commands: from the oldest, as many as fit the limits (the first always goes, however
 * large), stopping at the first that does not, so records of one key keep their commands' order.
 */
function nextGroup(queue: readonly Pending[], maxBytes: number, maxRecords: number) {
  const group: Pending[] = [];
  const rest: Pending[] = [];
  let bytes = 0;
  let records = 0;
  for (const pending of queue) {
    if (pending.cancelled) continue;
    const fits = bytes + pending.bytes <= maxBytes && records + pending.messages.length <= maxRecords;
    if (group.length === 0 || (rest.length === 0 && fits)) {
      group.push(pending);
      bytes += pending.bytes;
      records += pending.messages.length;
    } else rest.push(pending);
  }
  return { group, bytes, rest };
}

/** The group's records by topic, each command's first place among its partition's records of the request. */
function layOut(group: readonly Pending[]) {
  const byTopic = new Map<string, Message[]>();
  const firstIndex = new Map<Pending, number>();
  const countInPartition = new Map<string, number>();
  for (const pending of group) {
    const messages = byTopic.get(pending.topic) ?? [];
    byTopic.set(pending.topic, messages);
    const slot = `${pending.topic}\u0000${pending.partition}`;
    const index = countInPartition.get(slot) ?? 0;
    firstIndex.set(pending, index);
    countInPartition.set(slot, index + pending.messages.length);
    for (const message of pending.messages) messages.push({ ...message, partition: pending.partition });
  }
  return { byTopic, firstIndex };
}

/** Each command's position: its partition batch's base offset plus its place in it and its records. */
function settlePositions(
  group: readonly Pending[],
  firstIndex: ReadonlyMap<Pending, number>,
  metadata: readonly RecordMetadata[],
) {
  const base = new Map(
    metadata.map((entry) => [`${entry.topicName}\u0000${entry.partition}`, entry.baseOffset]),
  );
  for (const pending of group) {
    const baseOffset = base.get(`${pending.topic}\u0000${pending.partition}`);
    if (baseOffset === undefined || baseOffset === null) {
      pending.reject(new Error('the event log acknowledged no offset'));
      continue;
    }
    pending.resolve({
      topic: pending.topic,
      partition: pending.partition!,
      nextOffset: BigInt(baseOffset) + BigInt(firstIndex.get(pending)!) + BigInt(pending.messages.length),
    });
  }
}

/**
 * Group commit on the log: while one request is in flight (the idempotent producer allows one), the
 * records of every command that becomes ready accumulate, and all of them go in the next request, one
 * record batch per partition (compressed as before). Each command learns its own offsets: the base
 * offset of its partition's batch plus its place among that partition's records, so its
 * read-your-writes wait is exact. Records of one key keep the order in which their commands asked.
 * A group holds at most `maxGroupBytes` (the most one record batch may hold) and `maxGroupRecords`;
 * a command that does not fit goes in the request after.
 *
 * After a failed request the next one goes through a new producer. kafkajs's idempotent producer
 * numbers each partition's batches and, when a request fails, takes its numbers back so its retry
 * reuses them. If the broker wrote the batch and only the answer was lost, and the request then fails
 * for good (its retries run out, or its callers' bound passes while it still retries), those numbers
 * are free again in the producer yet taken at the broker: the next, different batch would carry them,
 * and the broker would acknowledge it as a duplicate of the first without writing it. A command would
 * answer success for events that are not on the log. A new producer has a new producer id, whose
 * numbering the broker keeps apart; the old one is disconnected once its own request has settled
 * (its records may still land, as with any timeout).
 */
export function createGroupAppender(options: {
  /** A new idempotent producer, not yet connected (`createEventProducer`). */
  openProducer: () => Producer;
  partitionCount: (topic: string) => Promise<number>;
  maxGroupBytes: number;
  /** `MAX_GROUP_RECORDS` unless set. */
  maxGroupRecords?: number;
  bounded: <T>(call: () => Promise<T>, bytes: number) => Promise<T>;
}): GroupAppender {
  const { openProducer, partitionCount, maxGroupBytes, bounded } = options;
  const maxGroupRecords = options.maxGroupRecords ?? MAX_GROUP_RECORDS;
  let queue: Pending[] = [];
  let sending = false;
  /** The producer requests go through, once connected; unset after a failed request. */
  let inUse: Promise<Producer> | undefined;
  /** Every producer opened and not yet disconnected. */
  const open = new Set<Producer>();

  const disconnect = async (producer: Producer) => {
    open.delete(producer);
    await producer.disconnect().catch(() => undefined);
  };

  function producerInUse(): Promise<Producer> {
    if (inUse) return inUse;
    const connecting = (async () => {
      const producer = openProducer();
      open.add(producer);
      try {
        await producer.connect();
        return producer;
      } catch (error) {
        await disconnect(producer);
        throw error;
      }
    })();
    inUse = connecting;
    // One that could not connect is forgotten: the next request opens another.
    connecting.catch(() => {
      if (inUse === connecting) inUse = undefined;
    });
    return connecting;
  }

  /** Stops sending through the producer of a failed request; disconnects it once the request settles. */
  function retire(producer: Promise<Producer>, request: Promise<unknown>) {
    if (inUse === producer) inUse = undefined;
    void request
      .catch(() => undefined)
      .then(() => producer)
      .then(disconnect, () => undefined);
  }

  async function flush() {
    if (sending) return;
    sending = true;
    try {
      while (queue.length > 0) {
        const { group, bytes, rest } = nextGroup(queue, maxGroupBytes, maxGroupRecords);
        queue = rest;
        if (group.length > 0) await sendGroup(group, bytes);
      }
    } finally {
      sending = false;
    }
  }

  async function sendGroup(group: Pending[], bytes: number) {
    const producer = producerInUse();
    /** Set once the batch is handed to the producer: only then is its numbering in doubt. */
    let request: Promise<RecordMetadata[]> | undefined;
    /** Past the bound before the producer was connected: the batch is never sent. */
    let abandoned = false;
    try {
      // Each record's partition is fixed here, with the default partitioner the consumers assume.
      for (const pending of group) {
        pending.partition = partitionForKey(pending.topic, pending.key, await partitionCount(pending.topic));
      }
      const { byTopic, firstIndex } = layOut(group);
      const metadata = await bounded(
        () =>
          producer.then((connected) => {
            if (abandoned) throw new Error('abandoned before it was sent');
            return (request = connected.sendBatch({
              acks: EVENT_PRODUCER_DURABILITY.acks,
              compression: logCompression(bytes),
              topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
            }));
          }),
        bytes,
      );
      settlePositions(group, firstIndex, metadata);
    } catch (error) {
      abandoned = true;
      // A producer still connecting stays in use (the next group waits for the same connection):
      // opening one per group would pile up connections to a broker that does not answer.
      if (request) retire(producer, request);
      for (const pending of group) pending.reject(error as Error);
    }
  }

  // Connected ahead of the first command; one that cannot connect now is replaced when a command comes.
  producerInUse().catch(() => undefined);

  return {
    append(request) {
      let pending!: Pending;
      const position = new Promise<AppendPosition>((resolve, reject) => {
        pending = { ...request, resolve, reject, cancelled: false };
      });
      // A caller past its own bound no longer listens; the request's failure is its other callers'.
      position.catch(() => undefined);
      queue.push(pending);
      void flush();
      return {
        position,
        abandon: () => {
          pending.cancelled = true;
        },
      };
    },
    async close() {
      const current = inUse;
      inUse = undefined;
      // One still connecting (to a broker that is down) is disconnected once it gets there.
      void current?.then(disconnect, () => undefined);
      await Promise.all([...open].map(disconnect));
    },
  };
}
