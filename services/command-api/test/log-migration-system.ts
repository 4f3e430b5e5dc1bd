import type { RunningInboundDecider } from '@leadline/inbound-decider';
import { defineProjection, projections, startProjector, type RunningProjector } from '@leadline/projector';
import type { DomainEvent } from '@leadline/events';
import {
  createDb,
  newUuid,
  ORIGIN_HEADER,
  readLogRanges,
  type Database,
  type MigrateLogDeps,
} from '@leadline/runtime';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll } from 'vitest';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { postInboundSms } from '../../../system-test/inbound-sms';
import { readModelSnapshot, recordAppliedEvents, appliedEvents } from '../../../system-test/log';
import { startSystem, type TestSystem } from '../../../system-test/system';
import { startTestInboundDecider } from '../../../system-test/workers';

/**
 * What the log migration tests share: the system with its projector and inbound decider started by
 * hand (so a test can stop a consumer across a cutover), a partner, and readers of the raw log.
 */
export let system: TestSystem;
export let partner: PartnerClient;
let projector: RunningProjector | undefined;
let projectorDb: Kysely<Database>;
let decider: RunningInboundDecider | undefined;
let deciderDb: Kysely<Database>;
let migrationDb: Kysely<Database>;

/** A lead named "boom" cannot be projected while the fault is on: it is parked. */
export const fault = { on: true };
const faulty = defineProjection('faulty (test)', ['lead.created'], async (_trx, events) => {
  if (fault.on && events.some((event) => event.data.name === 'boom')) throw new Error('injected fault');
});

export async function startDecider() {
  decider = await startTestInboundDecider(system, { db: deciderDb });
}

export async function stopDecider() {
  await decider?.stop();
  decider = undefined;
}

/** The system on this file's own database and topics, with one partner (Migration CRM). */
export function useMigrationSystem() {
  beforeAll(async () => {
    system = await startSystem({ projector: false, inboundDecider: false, awaitInbound: false });
    await recordAppliedEvents(system.services.db);
    projectorDb = createDb(system.env.config.DATABASE_URL, { maxConnections: 6 });
    deciderDb = createDb(system.env.config.DATABASE_URL, { maxConnections: 4 });
    migrationDb = createDb(system.env.config.DATABASE_URL, {
      maxConnections: 4,
      timeouts: { statementMs: 0 },
    });
    projector = await startProjector({
      ...system.services,
      db: projectorDb,
      groupId: system.projectorGroupId,
      projections: [...projections, faulty, appliedEvents],
      concurrency: 4,
      parkedPollMs: 100,
      onParked: () => undefined,
    });
    await startDecider();
    partner = partnerClient(system.app, await system.createPartner('Migration CRM'));
  }, 120_000);
  afterAll(async () => {
    await stopDecider();
    await projector?.stop();
    await projectorDb?.destroy();
    await deciderDb?.destroy();
    await migrationDb?.destroy();
    await system?.close();
  });
}

export const migrationDeps = (log: string[]): MigrateLogDeps => ({
  db: migrationDb,
  kafka: system.services.kafka,
  admin: system.services.admin,
  schemaRegistryUrl: system.env.config.SCHEMA_REGISTRY_URL,
  personalDataKeys: system.services.personalDataKeys,
  prefix: system.env.config.TOPIC_PREFIX,
  log: (message) => log.push(message),
});

/** A record as the log holds it: where, its key and bytes, and the position it was copied from. */
export interface RawRecord {
  topic: string;
  partition: number;
  offset: bigint;
  key: string;
  value: Buffer;
  origin: string | undefined;
}

export interface LogRecord extends RawRecord {
  event: DomainEvent;
}

/** Every record `topic` holds now, undecoded, in log order per partition. */
export async function rawRecordsOf(
  { admin, kafka }: Pick<TestSystem['services'], 'admin' | 'kafka'>,
  topic: string,
): Promise<RawRecord[]> {
  const ends = await admin.fetchTopicOffsets(topic);
  const ranges = new Map(ends.map((end) => [end.partition, { from: 0n, to: BigInt(end.high) }]));
  const records: RawRecord[] = [];
  await readLogRanges(kafka, admin, topic, ranges, (partition, message) => {
    records.push({
      topic,
      partition,
      offset: BigInt(message.offset),
      key: message.key!.toString(),
      value: message.value!,
      origin: message.headers?.[ORIGIN_HEADER]?.toString(),
    });
  });
  return records.sort((a, b) => a.partition - b.partition || Number(a.offset - b.offset));
}

/** Every record `topic` holds now, decoded, in log order per partition. */
export async function recordsOf(topic: string): Promise<LogRecord[]> {
  const records = await rawRecordsOf(system.services, topic);
  return Promise.all(
    records.map(async (record) => ({ ...record, event: await system.services.codec.decode(record.value) })),
  );
}

/** Event ids per key, in log order. */
export function idsByKey(records: readonly LogRecord[]) {
  const byKey = new Map<string, string[]>();
  for (const record of records) {
    const ids = byKey.get(record.key) ?? [];
    byKey.set(record.key, ids);
    ids.push(record.event.id);
  }
  return byKey;
}

export const readModels = () => readModelSnapshot(system.services.db);

export type Op = 'import' | 'bulk' | 'message' | 'inbound';
export interface Outcome {
  op: Op;
  account: string;
  status: number;
  code: string | undefined;
  retryAfter: string | undefined;
  ms: number;
  /** What the write names: the phones imported, the message's id, the inbound SMS's SID. */
  phones: string[];
  messageId?: string;
  sid?: string;
  afterCutover: boolean;
}

interface Answer {
  status: number;
  body: { code?: string; message_id?: string };
  headers: Record<string, unknown>;
}

/**
 * The write loop: each client its own account, importing leads (one and five at a time), sending
 * manual messages and posting inbound SMS, one request after another, until stopped. Each outcome
 * says whether it was asked after `cutOver()`.
 */
export function startWriteLoop(accounts: readonly { id: string; number: string }[]) {
  const outcomes: Outcome[] = [];
  let cutOver = false;
  let stop = false;
  const write = async (client: number, n: number, phones: string[], op: Op): Promise<Outcome> => {
    const account = accounts[client]!;
    const phone = (k: number) => `+151255${client}${String(k).padStart(4, '0')}`;
    const started = performance.now();
    const outcome: Partial<Outcome> = { op, account: account.id, phones: [], afterCutover: cutOver };
    let response: Answer;
    if (op === 'import') {
      outcome.phones = [phone(n * 5)];
      response = await partner.post(`/accounts/${account.id}/leads`, {
        phone: outcome.phones[0],
        name: `Lead ${n}`,
      });
    } else if (op === 'bulk') {
      outcome.phones = [1, 2, 3, 4, 5].map((k) => phone(n * 5 + k));
      response = await partner.post(`/accounts/${account.id}/leads/bulk`, {
        leads: outcome.phones.map((p) => ({ phone: p })),
      });
    } else if (op === 'message') {
      response = await partner.post(
        `/accounts/${account.id}/conversations/${encodeURIComponent(phones[n % phones.length]!)}/messages`,
        { body: `Message ${n}` },
      );
      outcome.messageId = response.body?.message_id;
    } else {
      outcome.sid = `SM${client}${String(n).padStart(6, '0')}${newUuid().replaceAll('-', '').slice(0, 25)}`;
      const answer = await postInboundSms(system, {
        sid: outcome.sid,
        from: phones[n % phones.length]!,
        to: account.number,
        body: `Reply ${n}`,
      });
      response = {
        status: answer.statusCode,
        headers: answer.headers,
        body: answer.statusCode === 200 ? {} : answer.json(),
      };
    }
    return {
      ...(outcome as Outcome),
      status: response.status,
      code: response.body?.code,
      retryAfter: response.headers['retry-after'] as string | undefined,
      ms: performance.now() - started,
    };
  };
  const loop = async (client: number) => {
    const phones: string[] = [];
    for (let n = 0; !stop; n++) {
      const op: Op = (['import', 'bulk', 'message', 'inbound'] as const)[phones.length === 0 ? 0 : n % 4]!;
      const outcome = await write(client, n, phones, op);
      outcomes.push(outcome);
      if (outcome.status < 300 && (op === 'import' || op === 'bulk')) phones.push(...outcome.phones);
    }
  };
  const running = accounts.map((_, client) => loop(client));
  return {
    outcomes,
    /** How many writes were acknowledged before (false) or after (true) the cutover. */
    acknowledged: (after: boolean) =>
      outcomes.filter((o) => o.status < 300 && o.afterCutover === after).length,
    cutOver: () => {
      cutOver = true;
    },
    stop: async () => {
      stop = true;
      await Promise.allSettled(running);
    },
  };
}
