import {
  eventDefinitionsByType,
  type Actor,
  type DomainEvent,
  type EventCodec,
  type NewEvent,
  type TopicNames,
  parseTopicName,
  topicNames,
  UnstorableTextError,
} from '@leadline/events';
import type { Kysely, Transaction } from 'kysely';
import type { Kafka } from 'kafkajs';
import { DomainError, unavailable } from '@leadline/domain';
import type { Clock, NewId } from './clock';
import { inTransaction } from './command-transaction';
import type { Database } from './db/schema';
import { eventLogBudget, eventLogCalls, type EventLogBudget } from './event-log-budget';
import { APPEND_MAX_BYTES, createEventProducer, createLogEnds, partitionForKey } from './kafka';
import { enterWriteFence, type LogGeneration } from './log-generations';
import { createKeyedBatcher } from './keyed-batcher';
import { createGroupAppender, createOffsetsCoalescer, type AppendPosition } from './log-writer';
import { timeStage } from './metrics';
import { refuseHeldStream } from './parking';
import type { ProjectionProgress } from './projection-progress';

/** Who is asking and under which request, stamped on every event the command produces. */
export interface CommandContext {
  partnerId: string;
  actor: Actor;
  correlationId: string;
  causationId?: string | null;
}

/**
 * An event to append. A command or a batch of facts that records the outcomes of several requests at
 * once (a gateway pass, a sequencer claim, a burst of inbound SMS) names each event's own request, so
 * the log still traces every event to what caused it; without it the context's ids stand.
 */
export type EventToAppend = NewEvent & { correlationId?: string; causationId?: string | null };

/** The stream the command's events are appended to. */
export type EventStream = { topic: 'account'; accountId: string } | { topic: 'partner' };

export interface Command<R> {
  stream: EventStream;
  context: CommandContext;
  /** Advisory locks held while deciding and appending; every writer of a stream takes the same ones. */
  lockKeys: string[];
  /**
   * How much of the log must be projected before `decide` reads: the stream's own partition, or
   * nothing, for a decision that reads no read model (it reads only tables kept in its own
   * transaction, such as a new stream's reservations; its stream has no events yet). There is
   * deliberately no platform-wide option (waiting for the whole topic serialized every creation behind
   * every other write); a rule across streams, such as a unique slug or number, is a unique
   * reservation in Postgres taken in `decide`'s transaction, which rolls back if the append fails.
   */
  consistency: 'partition' | 'none';
  /**
   * False for a caller that never reads its own writes through the read models (a background service
   * whose next decision waits for the log anyway): it returns once the events are appended.
   */
  readYourWrites?: boolean;
  /** Reads what it needs through `db` and returns the events to append, or throws a DomainError. */
  decide(db: Transaction<Database>): Promise<{ events: EventToAppend[]; result: R }>;
}

export interface Facts {
  stream: EventStream;
  context: CommandContext;
  events: EventToAppend[];
  /**
   * False for a caller that must answer as soon as the facts are durable, whatever the projector's
   * lag (Twilio's webhooks: a slow answer is a lost message); it returns once they are appended.
   */
  readYourWrites?: boolean;
}

export interface CommandBus {
  execute<R>(command: Command<R>): Promise<{ events: DomainEvent[]; result: R }>;
  /**
   * Appends plain facts that no decision depends on (an inbound message arrived, a partner was
   * registered): no lock and no wait before appending; read-your-writes afterwards unless the facts
   * say otherwise.
   */
  append(facts: Facts): Promise<DomainEvent[]>;
  /** Disconnects its producers. */
  close(): Promise<void>;
}

export interface CommandBusDeps {
  db: Kysely<Database>;
  /**
   * The cluster its idempotent producers connect to (a new one after each failed append), and its
   * reader of the partitions' ends.
   */
  kafka: Kafka;
  codec: EventCodec;
  /**
   * The log's topics, for their prefix: each append goes to the generation active when it entered the
   * write fence (see log-generations.ts), whatever generation these name.
   */
  topics: TopicNames;
  progress: ProjectionProgress;
  clock: Clock;
  newId: NewId;
  /** Bound on waiting for the projector, before deciding and before answering. */
  projectionWaitMs: number;
  /**
   * Bound on each call to Kafka on the write path (the high-watermark lookup, the append): past it,
   * or on any Kafka error, the command answers 503 `event_log_unavailable` and its transaction (its
   * locks, its connection) ends. 3 s by default.
   */
  eventLogTimeoutMs?: number;
  /** The most one command may append, encoded (see `APPEND_MAX_BYTES`); lowered only by tests. */
  appendMaxBytes?: number;
}

/** The most appends of facts that share one transaction in the write fence (see `append`). */
const FACTS_PER_FENCE = 100;

/** Bytes per extra millisecond allowed for an append: 250 ms more per MB, for compressing and sending. */
const PER_EXTRA_MS_BYTES = 4096;

/**
 * The size of the records as Kafka frames them before compression: key, value and headers, plus each
 * record's own framing (lengths, offset and timestamp deltas; at most about 30 bytes).
 */
export function encodedSize(
  messages: readonly { key: string; value: Buffer; headers: Record<string, string> }[],
): number {
  let bytes = 0;
  for (const { key, value, headers } of messages) {
    bytes += 32 + Buffer.byteLength(key) + value.length;
    for (const [name, header] of Object.entries(headers)) {
      bytes += 10 + Buffer.byteLength(name) + Buffer.byteLength(header);
    }
  }
  return bytes;
}

/** The event as the log keeps it: its id, version, stream, time, actor and the request it traces to. */
const stampEvent = (
  { newId, clock }: Pick<CommandBusDeps, 'newId' | 'clock'>,
  event: EventToAppend,
  stream: EventStream,
  context: CommandContext,
): DomainEvent =>
  ({
    id: newId(),
    type: event.type,
    version: eventDefinitionsByType.get(event.type)?.version ?? 1,
    account_id: stream.topic === 'account' ? stream.accountId : null,
    partner_id: context.partnerId,
    occurred_at: clock.now().toISOString(),
    actor: context.actor,
    correlation_id: event.correlationId ?? context.correlationId,
    causation_id:
      event.correlationId === undefined ? (context.causationId ?? null) : (event.causationId ?? null),
    data: event.data,
  }) as DomainEvent;

/** The event's record; text the log cannot store is the request's fault, a 400. */
async function encodeForLog(codec: EventCodec, event: DomainEvent) {
  try {
    return await codec.encode(event);
  } catch (error) {
    // The API refuses such text at its edge; this catches any other path that lets it through.
    if (!(error instanceof UnstorableTextError)) throw error;
    throw new DomainError(400, 'validation_failed', 'The request is not valid.', {
      errors: [{ field: error.problem.field, message: error.problem.message }],
    });
  }
}

/** Facts of one stream to append: their topic kind, their record key and the stamped events. */
interface FactsToAppend {
  topic: EventStream['topic'];
  key: string;
  events: DomainEvent[];
}

/**
 * Facts share the write fence: those appended while a fence transaction is open wait for it to end
 * and then enter the next one together (group commit), so a burst of Twilio's webhooks or a gateway's
 * reports pays the fence (begin, `enter_write_fence`, commit) once per batch, not once each. Each keeps
 * its own outcome (one refused as too large fails alone) and its own bound on the log from its append
 * on; the fence itself waits out a cutover (up to `fenceWaitMs`) for all of them, as it did for each.
 */
function factsInFence(
  db: Kysely<Database>,
  fenceWaitMs: number,
  appendIn: (generation: LogGeneration, facts: FactsToAppend) => Promise<AppendPosition>,
) {
  return createKeyedBatcher<FactsToAppend, { position: AppendPosition } | { error: unknown }>({
    keyOf: () => 'facts',
    conflicts: () => false,
    maxBatch: FACTS_PER_FENCE,
    run: (_key, batch) =>
      // The fence is held until every append is acknowledged or given up on, as a command holds it.
      inTransaction(db, async (trx) => {
        const generation = await enterWriteFence(trx, { waitMs: fenceWaitMs });
        return Promise.all(
          batch.map((facts) =>
            appendIn(generation, facts).then(
              (position) => ({ position }),
              (error: unknown) => ({ error }),
            ),
          ),
        );
      }),
  });
}

/**
 * The decide-and-append path: Kafka is the only source of truth, and decisions are made against read
 * models that are provably caught up with it.
 *   1. take the stream's advisory locks (a Postgres transaction holds them), enter the write fence
 *      (refused while a migration of the log cuts over) and read the generation of topics to append to;
 *   2. wait until the projector has applied everything up to the partition's high watermark;
 *   3. decide against the read models;
 *   4. append the events (idempotent, acks=all) and release the locks;
 *   5. wait until the projector has applied them, so the caller reads its own writes.
 */
export function createCommandBus(deps: CommandBusDeps): CommandBus {
  const { db, kafka, codec, topics, progress, clock, newId, projectionWaitMs } = deps;
  const eventLogTimeoutMs = deps.eventLogTimeoutMs ?? 3000;
  const appendMaxBytes = deps.appendMaxBytes ?? APPEND_MAX_BYTES;
  // Topics that are not the log's (a test's own) are written as named, whatever the generation.
  const layout = parseTopicName(topics.account);
  const topicsOf = (generation: LogGeneration): TopicNames =>
    layout ? topicNames(layout.prefix, generation.generation) : topics;
  const { fromEventLog, answeredSince } = eventLogCalls(eventLogTimeoutMs);
  const stamp = (event: EventToAppend, stream: EventStream, context: CommandContext) =>
    stampEvent({ newId, clock }, event, stream, context);

  // The partition count of each topic, as the last high-watermark lookup saw it (partitions are only
  // ever added), so every record's partition is the one the default partitioner picks.
  const partitionCounts = new Map<string, number>();
  const logEnds = createLogEnds(kafka);
  const freshOffsets = createOffsetsCoalescer(async (topic) => {
    const offsets = await fromEventLog('reading its end', () => logEnds.of(topic));
    partitionCounts.set(topic, offsets.length);
    return offsets;
  });
  const appender = createGroupAppender({
    openProducer: () => createEventProducer(kafka),
    maxGroupBytes: appendMaxBytes,
    partitionCount: async (topic) => partitionCounts.get(topic) ?? (await freshOffsets(topic)).length,
    bounded: (call, bytes) => fromEventLog('appending', call, Math.floor(bytes / PER_EXTRA_MS_BYTES)),
  });

  async function waitForHighWatermark(topic: string, partitionKey: string, budget: EventLogBudget) {
    // A lookup shared with concurrent commands, started after this one took its locks; waited for
    // within this command's own bound, which may end before the shared lookup's.
    const offsets = await timeStage('offsets', () =>
      fromEventLog('reading its end', () => freshOffsets(topic), 0, budget),
    );
    const partition = partitionForKey(topic, partitionKey, offsets.length);
    const relevant = offsets.filter((entry) => entry.partition === partition);
    const caughtUp = await timeStage('catch_up', () =>
      budget.excluding(() =>
        Promise.all(
          relevant.map((entry) =>
            progress.waitFor(topic, entry.partition, BigInt(entry.high), projectionWaitMs),
          ),
        ),
      ),
    );
    if (caughtUp.includes(false)) {
      throw unavailable(
        'projection_lagging',
        'The read models are catching up with the event log; retry shortly.',
      );
    }
  }

  const keyOf = (stream: EventStream, context: CommandContext) =>
    stream.topic === 'account' ? stream.accountId : context.partnerId;

  async function appendToLog(
    topic: string,
    key: string,
    events: DomainEvent[],
    budget?: EventLogBudget,
  ): Promise<AppendPosition> {
    const messages = await Promise.all(
      events.map(async (event) => ({
        key,
        value: await encodeForLog(codec, event),
        headers: { 'event-type': event.type },
      })),
    );
    const bytes = encodedSize(messages);
    // Refused whole, before anything is sent: the broker would refuse the batch on every retry.
    if (bytes > appendMaxBytes) {
      throw new DomainError(
        413,
        'event_batch_too_large',
        `The request produces ${events.length} events of ${bytes} bytes, more than the ${appendMaxBytes} bytes one request may append; nothing was written. Split it into smaller requests.`,
      );
    }
    // Past the bound the send may still land later (as with any timeout): the 503 tells the client to
    // retry, and every write path deduplicates or re-decides against what the log then holds. The
    // records share the next request with every other command ready at the same moment; the bound
    // counts from here, as it did when sends queued in the producer, and a caller past it takes back
    // its records if they are not sent yet.
    const { position, abandon } = appender.append({ topic, key, messages, bytes });
    try {
      return await fromEventLog('appending', () => position, Math.floor(bytes / PER_EXTRA_MS_BYTES), budget);
    } finally {
      abandon();
    }
  }

  const appendFactsInFence = factsInFence(db, eventLogTimeoutMs, (generation, facts) =>
    appendToLog(topicsOf(generation)[facts.topic], facts.key, facts.events),
  );

  return {
    async execute(command) {
      const { stream, context } = command;
      const key = keyOf(stream, context);
      // From here, the wait for a connection and for the stream's locks included: while the log does not
      // answer, a write is refused within EVENT_LOG_TIMEOUT_MS of its start, however many were queued.
      const budget = eventLogBudget(eventLogTimeoutMs);

      const { events, result, position } = await inTransaction(db, async (trx) => {
        // Sorted, so two commands that share locks always take them in the same order.
        const topic = await timeStage('lock', async () => {
          // The fence after the stream's locks, in the same statement: a cutover waits for the commands
          // already deciding, not for those queued behind one account's lock; those are refused at once
          // when their turn comes.
          const locks = [...new Set(command.lockKeys)].sort();
          return topicsOf(await enterWriteFence(trx, { waitMs: 0, locks }))[stream.topic];
        });
        // A write whose locks were held by a command stuck on the log is refused at once when its turn
        // comes, its bound spent in the queue. But if the log answered meanwhile, the holder waited on
        // something else (the projector, a long decision): the log's bound starts now, and a refusal
        // names what is really behind (`projection_lagging`) rather than a log that is up.
        if (answeredSince(budget.startedAt)) budget.restart();
        if (command.consistency === 'partition') await waitForHighWatermark(topic, key, budget);
        await refuseHeldStream(trx, key);
        const decision = await timeStage('decide', () => command.decide(trx));
        const stamped = decision.events.map((event) => stamp(event, stream, context));
        const position =
          stamped.length > 0
            ? await timeStage('append', () => appendToLog(topic, key, stamped, budget))
            : undefined;
        return { events: stamped, result: decision.result, position };
      });

      // The events are durable now; a slow projector delays the answer but never fails the command.
      if (position && command.readYourWrites !== false)
        await timeStage('read_your_writes', () =>
          progress.waitFor(position.topic, position.partition, position.nextOffset, projectionWaitMs),
        );
      return { events, result };
    },

    async append({ stream, context, events, readYourWrites }) {
      const stamped = events.map((event) => stamp(event, stream, context));
      if (stamped.length === 0) return stamped;
      // Facts wait out a cutover (within the log's bound) rather than be refused.
      const appended = await appendFactsInFence({
        topic: stream.topic,
        key: keyOf(stream, context),
        events: stamped,
      });
      if ('error' in appended) throw appended.error;
      const { position } = appended;
      if (readYourWrites !== false)
        await progress.waitFor(position.topic, position.partition, position.nextOffset, projectionWaitMs);
      return stamped;
    },

    async close() {
      await Promise.all([appender.close(), logEnds.disconnect()]);
    },
  };
}
