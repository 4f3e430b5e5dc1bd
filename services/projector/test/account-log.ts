import type { DomainEvent, EventData, EventType } from '@leadline/events';
import {
  connectInfrastructure,
  createEventProducer,
  newUuid,
  partitionForKey,
  type Infrastructure,
} from '@leadline/runtime';
import { createTestEnvironment, type TestEnvironment } from '@leadline/test-kit';
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, expect } from 'vitest';
import { projections } from '../src/projections';
import { rebuild } from '../src/rebuild';

/** A test file's own log and read models, with what the projector tests do on them. */
export interface ProjectorLog {
  env: TestEnvironment;
  infrastructure: Infrastructure;
  /**
   * Appends the account's events to its partition in one request, and returns the records as the live
   * projector would hand them over (`records(events, from)`: those events at their offsets, `from`
   * being the first's place in the append).
   */
  append(
    accountId: string,
    events: readonly DomainEvent[],
  ): Promise<{
    topic: string;
    partition: number;
    records(events: readonly DomainEvent[], from?: number): { offset: string; event: DomainEvent }[];
  }>;
  /** `npm run rebuild`: every read model projected afresh from the log and swapped in. */
  rebuild(): Promise<void>;
}

/** Sets up (before the file's tests) and tears down (after them) a log for the projector tests. */
export function projectorLog(clientId: string): ProjectorLog {
  let producer: Producer | undefined;
  const log = {
    async append(accountId, events) {
      const { infrastructure } = log;
      const topic = infrastructure.topics.account;
      const partitions = (await infrastructure.admin.fetchTopicOffsets(topic)).length;
      const partition = partitionForKey(topic, accountId, partitions);
      const messages = await Promise.all(
        events.map(async (entry) => ({ key: accountId, value: await infrastructure.codec.encode(entry) })),
      );
      const [sent] = await producer!.send({ topic, acks: -1, messages });
      expect(sent!.partition).toBe(partition);
      const base = BigInt(sent!.baseOffset!);
      return {
        topic,
        partition,
        records: (some, from = 0) =>
          some.map((entry, index) => ({ offset: String(base + BigInt(from + index)), event: entry })),
      };
    },
    async rebuild() {
      await rebuild({
        ...log.infrastructure,
        databaseUrl: log.env.config.DATABASE_URL,
        groupPrefix: log.env.config.TOPIC_PREFIX,
        projections,
      });
    },
  } as ProjectorLog;
  beforeAll(async () => {
    log.env = await createTestEnvironment();
    log.infrastructure = await connectInfrastructure(log.env.config, clientId);
    producer = createEventProducer(log.infrastructure.kafka);
    await producer.connect();
  });
  afterAll(async () => {
    await producer?.disconnect();
    await log.infrastructure?.close();
    await log.env?.dispose();
  });
  return log;
}

/** Events of one account, a second apart from 2026-01-01T00:00:00Z in the order they are made. */
export function accountEventMaker(accountId: string) {
  let second = 0;
  return <T extends EventType>(type: T, data: EventData<T>): DomainEvent =>
    ({
      id: newUuid(),
      type,
      version: 1,
      account_id: accountId,
      partner_id: 'partner-under-test',
      occurred_at: new Date(Date.UTC(2026, 0, 1, 0, 0, second++)).toISOString(),
      actor: { kind: 'system', service: 'test' },
      correlation_id: 'test',
      causation_id: null,
      data,
    }) as DomainEvent;
}
