import { setTimeout as sleep } from 'node:timers/promises';
import {
  createCommandBus,
  createGroupAppender,
  createEventProducer,
  createDb,
  DomainError,
  newUuid,
  systemClock,
  type AppendPosition,
  type Command,
  type CommandBusDeps,
  type Database,
} from '@leadline/runtime';
import { accountEvents, logSize, readTopic, startKafkaProxy } from '@leadline/test-kit';
import { Kafka, logLevel } from 'kafkajs';
import { Kysely, PostgresDialect, sql, type Transaction } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { refusingKafka } from '../../../system-test/log';
import { startSystem, type TestSystem } from '../../../system-test/system';

let system: TestSystem;
let acme: PartnerClient;
let key: string;

beforeAll(async () => {
  system = await startSystem();
  key = await system.createPartner('Acme CRM');
  acme = partnerClient(system.app, key);
});
afterAll(() => system?.close());

/** A command bus of the system's on connections of the test's own (`db`), with what the test varies. */
const commandBusOn = (db: Kysely<Database>, options: Partial<CommandBusDeps> = {}) =>
  createCommandBus({
    ...system.services,
    db,
    clock: systemClock,
    newId: newUuid,
    projectionWaitMs: 5000,
    ...options,
  });

const phone = (n: number) => `+1512555${String(n).padStart(4, '0')}`;

describe('commands running at once share high-watermark checks and appends', () => {
  it('imports on many accounts and on one account all succeed, each reading its own write, in order per account', async () => {
    const accounts: string[] = [];
    for (let i = 0; i < 8; i++) {
      accounts.push((await acme.post('/accounts', { name: `Group ${i}` })).body.id as string);
    }
    const importAndRead = async (account: string, n: number) => {
      const created = await acme.post(`/accounts/${account}/leads`, { phone: phone(n), name: `Lead ${n}` });
      expect(created.status).toBe(201);
      // Read-your-writes: the lead is listed the moment its import answers.
      const read = await acme.get(`/accounts/${account}/leads/${encodeURIComponent(phone(n))}`);
      expect(read.status).toBe(200);
      expect(read.body.name).toBe(`Lead ${n}`);
    };
    await Promise.all([
      // Spread over eight accounts...
      ...Array.from({ length: 40 }, (_, n) => importAndRead(accounts[n % 8]!, n)),
      // ...and twenty on one account.
      ...Array.from({ length: 20 }, (_, n) => importAndRead(accounts[0]!, 100 + n)),
    ]);

    const listed = await acme.get(`/accounts/${accounts[0]}/leads?limit=100`);
    expect(listed.body.total).toBe(5 + 20);

    // Every decision is on the log exactly once, and one account's events are in the order their
    // commands decided (each stamps its time holding the account's lock).
    const events = await accountEvents(system.services);
    const created = events.filter((event) => event.type === 'lead.created');
    expect(new Set(created.map((event) => event.id)).size).toBe(created.length);
    for (const account of accounts) {
      const mine = created.filter((event) => event.account_id === account);
      expect(mine).toHaveLength(account === accounts[0] ? 25 : 5);
      const times = mine.map((event) => event.occurred_at);
      expect(times).toEqual([...times].sort());
    }
  });

  it('tells each command the offsets of its own records, in one request shared by all', async () => {
    const { admin, kafka } = system.services;
    // A topic of its own: the records are raw bytes, not events.
    const topic = `${system.env.config.TOPIC_PREFIX}group-commit-raw`;
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 4 }] });
    const sent: { key: string; values: string[] }[] = [];
    const appender = createGroupAppender({
      openProducer: () => createEventProducer(kafka),
      maxGroupBytes: 1 << 20,
      partitionCount: async (topic) => (await admin.fetchTopicOffsets(topic)).length,
      bounded: (call) => call(),
    });
    const positions: Promise<AppendPosition>[] = [];
    for (let i = 0; i < 30; i++) {
      const recordKey = `group-key-${i % 7}`;
      const values = Array.from({ length: 1 + (i % 3) }, (_, j) => `value-${i}-${j}`);
      sent.push({ key: recordKey, values });
      positions.push(
        appender.append({
          topic,
          key: recordKey,
          messages: values.map((value) => ({ key: recordKey, value })),
          bytes: 100,
        }).position,
      );
    }
    const landed = await Promise.all(positions);
    await appender.close();

    // Read back the raw records of the topic with their partition and offset.
    const atOffset = new Map<string, string>();
    await readTopic({ admin, kafka }, topic, (partition, message) => {
      atOffset.set(`${partition}:${message.offset}`, message.value!.toString());
    });

    sent.forEach(({ values }, i) => {
      const { partition, nextOffset } = landed[i]!;
      const first = Number(nextOffset) - values.length;
      const found = values.map((_, j) => atOffset.get(`${partition}:${first + j}`));
      expect(found).toEqual(values);
    });
  });

  it('puts no more records in one request than its record limit, except one command larger than it alone', async () => {
    const { admin, kafka } = system.services;
    const topic = `${system.env.config.TOPIC_PREFIX}group-commit-records`;
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 2 }] });
    // The records of each request the producer is asked to send.
    const requests: number[] = [];
    const appender = createGroupAppender({
      openProducer: () => {
        const producer = createEventProducer(kafka);
        const sendBatch = producer.sendBatch.bind(producer);
        producer.sendBatch = (batch) => {
          requests.push(batch.topicMessages!.reduce((sum, entry) => sum + entry.messages.length, 0));
          return sendBatch(batch);
        };
        return producer;
      },
      maxGroupBytes: 1 << 20,
      maxGroupRecords: 4,
      partitionCount: async (topic) => (await admin.fetchTopicOffsets(topic)).length,
      bounded: (call) => call(),
    });
    const sizes = [1, 2, 3, 6, 1, 1, 2, 2, 3, 1];
    const landed = await Promise.all(
      sizes.map(
        (size, i) =>
          appender.append({
            topic,
            key: `records-key-${i % 3}`,
            messages: Array.from({ length: size }, (_, j) => ({
              key: `records-key-${i % 3}`,
              value: `${i}-${j}`,
            })),
            bytes: 10,
          }).position,
      ),
    );
    await appender.close();
    expect(requests.reduce((sum, records) => sum + records, 0)).toBe(22);
    // Commands ready together still share requests; the six-record command went alone.
    expect(requests.length).toBeLessThan(sizes.length);
    expect(requests.filter((records) => records > 4)).toEqual([6]);
    const atOffset = new Map<string, string>();
    await readTopic({ admin, kafka }, topic, (partition, message) => {
      atOffset.set(`${partition}:${message.offset}`, message.value!.toString());
    });
    sizes.forEach((size, i) => {
      const { partition, nextOffset } = landed[i]!;
      const first = Number(nextOffset) - size;
      expect(Array.from({ length: size }, (_, j) => atOffset.get(`${partition}:${first + j}`))).toEqual(
        Array.from({ length: size }, (_, j) => `${i}-${j}`),
      );
    });
  });

  it('after a request whose answer was lost, the next records are written, not taken for its duplicate', async () => {
    const { admin, kafka } = system.services;
    const topic = `${system.env.config.TOPIC_PREFIX}group-commit-lost-answer`;
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 1 }] });
    const proxy = await startKafkaProxy(system.env.config.KAFKA_BROKERS[0]!);
    // The client settings of `createKafka`, through the proxy.
    const proxied = new Kafka({
      clientId: 'lost-answer',
      brokers: system.env.config.KAFKA_BROKERS,
      retry: { initialRetryTime: 100, retries: 8 },
      socketFactory: proxy.socketFactory,
      logLevel: logLevel.NOTHING,
    });
    // The command bus's bound on an append: past it the caller answers 503 while kafkajs retries.
    const BOUND_MS = 500;
    const appender = createGroupAppender({
      openProducer: () => createEventProducer(proxied),
      maxGroupBytes: 1 << 20,
      partitionCount: async () => 1,
      bounded: (call) =>
        Promise.race([
          call(),
          new Promise<never>((_, reject) => setTimeout(() => reject(new Error('bound')), BOUND_MS)),
        ]),
    });
    const append = (value: string) =>
      appender.append({ topic, key: 'one-key', messages: [{ key: 'one-key', value }], bytes: 100 }).position;
    try {
      await append('first');
      // The broker writes "lost" but its answer never arrives, and the broker is out of reach for
      // longer than the caller waits: the caller gives up while kafkajs still retries the request.
      const outage = proxy.loseNextProduceAnswer(2_000);
      await expect(append('lost')).rejects.toThrow();
      await outage;
      // Back before that retry: the next record must be written where its caller is told.
      const next = await append('next');

      // kafkajs retries the abandoned request within 4 s of the lost answer (its backoff from 100 ms,
      // doubling, 20% jitter); the broker takes that retry for the copy it has.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      const atOffset = new Map<string, string>();
      await readTopic({ admin, kafka }, topic, (partition, message) => {
        atOffset.set(`${partition}:${message.offset}`, message.value!.toString());
      });
      expect(atOffset.get(`${next.partition}:${next.nextOffset - 1n}`)).toBe('next');
      const values = [...atOffset.values()];
      expect(values.filter((value) => value === 'next')).toHaveLength(1);
      // The abandoned record landed once, as a timed-out write may.
      expect(values.filter((value) => value === 'lost')).toHaveLength(1);
    } finally {
      await appender.close();
      await proxy.close();
    }
  });

  it('a request the log refuses fails every command in it with 503, and none of their decisions is visible', async () => {
    const db = createDb(system.env.config.DATABASE_URL, { maxConnections: 8 });
    const commands = commandBusOn(db, { kafka: refusingKafka(), eventLogTimeoutMs: 1000 });
    const app = await system.appWith({ commands });
    try {
      // Six accounts, so the six commands do not queue on one lock but share the refused request.
      const accounts: string[] = [];
      for (let n = 0; n < 6; n++) {
        accounts.push((await acme.post('/accounts', { name: `Refused ${n}` })).body.id as string);
      }
      const down = partnerClient(app, key);
      const before = await logSize(system.services);
      const answers = await Promise.all(
        Array.from({ length: 6 }, (_, n) =>
          down.post(`/accounts/${accounts[n]}/leads`, { phone: phone(500 + n), name: 'Never' }),
        ),
      );
      for (const answer of answers) {
        expect(answer.status).toBe(503);
        expect(answer.body.code).toBe('event_log_unavailable');
      }
      expect(await logSize(system.services)).toBe(before);
      for (const account of accounts) {
        expect((await acme.get(`/accounts/${account}/leads`)).body.total).toBe(0);
      }
      // The transactions rolled back: the same import goes through on a healthy path.
      const retried = await acme.post(`/accounts/${accounts[0]}/leads`, { phone: phone(500), name: 'Now' });
      expect(retried.status).toBe(201);
    } finally {
      // The app is closed with the system.
      await commands.close();
      await db.destroy();
    }
  });
});

describe('a busy database', () => {
  const command = (decide: (trx: Transaction<Database>) => Promise<void>): Command<null> => ({
    stream: { topic: 'account' as const, accountId: newUuid() },
    context: { partnerId: 'p', actor: { kind: 'system' as const, service: 'test' }, correlationId: 'c' },
    lockKeys: [],
    consistency: 'none' as const,
    decide: async (trx) => {
      await decide(trx);
      return { events: [], result: null };
    },
  });

  it('answers 503 database_busy when a statement times out', async () => {
    const failure = await system.services.commands
      .execute(
        command(async (trx) => {
          await sql`set local statement_timeout = '20ms'`.execute(trx);
          await sql`select pg_sleep(1)`.execute(trx);
        }),
      )
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(DomainError);
    expect(failure).toMatchObject({ status: 503, code: 'database_busy' });
  });

  it('answers 503 database_busy when a lock is not granted in time', async () => {
    const holder = new pg.Client({ connectionString: system.env.config.DATABASE_URL });
    await holder.connect();
    try {
      await holder.query('select pg_advisory_lock(4242)');
      const failure = await system.services.commands
        .execute(
          command(async (trx) => {
            await sql`set local lock_timeout = '20ms'`.execute(trx);
            await sql`select pg_advisory_xact_lock(4242)`.execute(trx);
          }),
        )
        .catch((error: unknown) => error);
      expect(failure).toMatchObject({ status: 503, code: 'database_busy' });
    } finally {
      await holder.end();
    }
  });
});

describe("a write queued behind its account's lock while the log is up", () => {
  const accountCommand = (accountId: string, decide: () => Promise<void>): Command<null> => ({
    stream: { topic: 'account' as const, accountId },
    context: { partnerId: 'p', actor: { kind: 'system' as const, service: 'test' }, correlationId: 'c' },
    lockKeys: [`account:${accountId}`],
    consistency: 'partition' as const,
    decide: async () => {
      await decide();
      return { events: [], result: null };
    },
  });

  it('is not refused as event_log_unavailable for the time its lock holder spent on something else', async () => {
    const db = createDb(system.env.config.DATABASE_URL, { maxConnections: 4 });
    const commands = commandBusOn(db, { eventLogTimeoutMs: 1000 });
    try {
      const account = newUuid();
      // The holder decides for two and a half bounds of the log (as one waiting for a stalled
      // projector would), while the log answers other accounts' writes.
      const holder = commands.execute(accountCommand(account, () => sleep(2500)));
      await sleep(200);
      const queued = commands.execute(accountCommand(account, async () => undefined)).then(
        () => 'decided',
        (error: unknown) => error,
      );
      await sleep(1000);
      await commands.execute(accountCommand(newUuid(), async () => undefined));
      await holder;
      expect(await queued).toBe('decided');
    } finally {
      await commands.close();
      await db.destroy();
    }
  });
});

describe('facts appended at once', () => {
  it('share one transaction in the write fence, each with its own outcome on the log', async () => {
    let fences = 0;
    const db = new Kysely<Database>({
      dialect: new PostgresDialect({
        pool: new pg.Pool({ connectionString: system.env.config.DATABASE_URL, max: 4 }),
      }),
      log: (event) => {
        if (event.level === 'query' && event.query.sql.includes('enter_write_fence(')) fences++;
      },
    });
    // Topics of its own, which no consumer of the system reads.
    const topic = `${system.env.config.TOPIC_PREFIX}facts-in-fence`;
    await system.services.admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 2 }] });
    const commands = commandBusOn(db, { topics: { account: topic, partner: topic }, appendMaxBytes: 4096 });
    try {
      const accountId = newUuid();
      const statusChanged = (leadPhone: string) =>
        commands.append({
          stream: { topic: 'account', accountId },
          context: { partnerId: 'p', actor: { kind: 'system', service: 'test' }, correlationId: 'c' },
          events: [
            {
              type: 'lead.status_changed',
              data: { lead_id: newUuid(), phone: leadPhone, previous_status: 'new', new_status: 'contacted' },
            },
          ],
          readYourWrites: false,
        });
      // Thirty facts at once, and one too large for the log among them.
      const outcomes = await Promise.allSettled([
        ...Array.from({ length: 15 }, (_, n) => statusChanged(phone(700 + n))),
        statusChanged(`+1${'5'.repeat(5000)}`),
        ...Array.from({ length: 15 }, (_, n) => statusChanged(phone(715 + n))),
      ]);

      expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(30);
      expect(outcomes[15]).toMatchObject({
        status: 'rejected',
        reason: { status: 413, code: 'event_batch_too_large' },
      });
      // One fence for the first, one for those that came while it was open: not one each.
      expect(fences).toBeGreaterThanOrEqual(1);
      expect(fences).toBeLessThanOrEqual(2);
      const appended = new Set<string>();
      await readTopic(system.services, topic, async (_partition, message) => {
        const event = await system.services.codec.decode(message.value!);
        if (event.account_id === accountId) appended.add(event.id);
      });
      const ids = outcomes.flatMap((outcome) =>
        outcome.status === 'fulfilled' ? [outcome.value[0]!.id] : [],
      );
      expect([...appended].sort()).toEqual(ids.sort());
    } finally {
      await commands.close();
      await db.destroy();
    }
  });
});
