import { projections, startProjector, type RunningProjector } from '@leadline/projector';
import { createDb, partitionForKey, type CheckpointTable, type Database } from '@leadline/runtime';
import {
  eventually,
  startTestKafkaCluster,
  underReplicated,
  type TestKafkaCluster,
} from '@leadline/test-kit';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountWrites, accountingReport } from '../../../system-test/accounting';
import { partnerClient } from '../../../system-test/client';
import { appliedEvents, applicationOf, recordAppliedEvents } from '../../../system-test/log';
import { startSystem, type TestSystem } from '../../../system-test/system';
import { longestUnavailability, startWriteLoop } from '../../../system-test/write-loop';

/** The most writes to the killed leader's partitions may go unanswered by an acknowledgement. */
const OUTAGE_BOUND_MS = 15_000;
/**
 * How long the write loop runs with the node dead, before it is started again: well past the bound,
 * so that writes to its partitions are seen to succeed again while it is dead however long the
 * failover takes, and a slow failover fails on the bound (below), which says by how much.
 */
const DEAD_FOR_MS = 25_000;

let cluster: TestKafkaCluster | undefined;
let system: TestSystem | undefined;
let projector: RunningProjector | undefined;
let projectorDb: Kysely<Database> | undefined;

beforeAll(async () => {
  cluster = await startTestKafkaCluster();
  // The log at replication factor 3 and min.insync.replicas 2 on the test's own three nodes; the
  // projector (with the test's record of what it applies), the inbound decider and the SMS gateway
  // consume it. A command waits up to 30 s for its events to be projected, as in the scaling test.
  system = await startSystem({
    brokers: cluster.brokers,
    replicationFactor: 3,
    projector: false,
    gateway: true,
    awaitInbound: false,
    projectionWaitMs: 30_000,
  });
  await recordAppliedEvents(system.services.db);
  projectorDb = createDb(system.env.config.DATABASE_URL, { maxConnections: 4 });
  projector = await startProjector({
    ...system.services,
    db: projectorDb,
    groupId: system.projectorGroupId,
    projections: [...projections, appliedEvents],
  });
}, 240_000);
afterAll(async () => {
  await projector?.stop().catch(() => undefined);
  await projectorDb?.destroy();
  await system?.close();
  await cluster?.dispose();
}, 120_000);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('kill -9 of the broker leading the busiest partition, under a write loop', () => {
  it('writes on its partitions are refused with 503 and Retry-After for at most 15 s, then succeed; nothing acknowledged is lost or applied twice; every consumer resumes; the node rejoins', async () => {
    const sys = system!;
    const { admin, topics, db } = sys.services;
    const partner = partnerClient(sys.app, await sys.createPartner('Broker kill CRM'));
    const accounts: string[] = [];
    for (let n = 0; n < 8; n++) {
      const created = await partner.post('/accounts', { name: `Broker kill ${n}` });
      expect(created.status).toBe(201);
      accounts.push(created.body.id);
    }
    const {
      topics: [accountTopic],
    } = await admin.fetchTopicMetadata({ topics: [topics.account] });
    const partitionOf = (account: string) =>
      partitionForKey(topics.account, account, accountTopic!.partitions.length);

    const loop = startWriteLoop({ partner, accounts, clients: 16, pauseAfterRefusalMs: 100 });
    /** When the node was killed, started again, and back in sync, in `performance.now()` time. */
    const at = { killed: 0, restarted: 0, rejoined: 0 };
    let node = 0;
    let affected = new Set<string>();
    let busiest = 0;
    try {
      await loop.acknowledgedMore(60);
      // The busiest partition: the one whose accounts had the most writes acknowledged so far.
      const writes = new Map<number, number>();
      for (const outcome of loop.outcomes)
        if (outcome.status < 300)
          writes.set(partitionOf(outcome.account), (writes.get(partitionOf(outcome.account)) ?? 0) + 1);
      busiest = [...writes].sort((a, b) => b[1] - a[1])[0]![0];
      const {
        topics: [before],
      } = await admin.fetchTopicMetadata({ topics: [topics.account] });
      node = before!.partitions.find((partition) => partition.partitionId === busiest)!.leader;
      // Every account on a partition that node leads loses its leader.
      const led = new Set(
        before!.partitions.filter((partition) => partition.leader === node).map((p) => p.partitionId),
      );
      affected = new Set(accounts.filter((account) => led.has(partitionOf(account))));

      at.killed = performance.now();
      await cluster!.kill(node);
      await sleep(DEAD_FOR_MS);
      const ackedWhileDead = loop.outcomes.filter(
        (outcome) => affected.has(outcome.account) && outcome.status < 300 && outcome.sentAt > at.killed,
      );
      expect(ackedWhileDead.length).toBeGreaterThan(0);

      at.restarted = performance.now();
      await cluster!.restart();
      // It rejoins: every partition of the log and of the group offsets has all its replicas in sync.
      const log = (await admin.listTopics()).filter(
        (topic) => topic.startsWith(sys.env.config.TOPIC_PREFIX) || topic === '__consumer_offsets',
      );
      await eventually(async () => ((await underReplicated(admin, log)).length === 0 ? true : undefined), {
        timeoutMs: 60_000,
        intervalMs: 500,
        message: `node ${node} never caught up`,
      }).catch(async (error: Error) => {
        throw new Error(
          `${error.message}: ${(await underReplicated(admin, log)).join(', ')} under-replicated`,
        );
      });
      // ...and takes back the leadership of its partitions (auto.leader.rebalance.enable): every
      // partition led by its preferred replica again, as before the kill.
      const unbalanced = async () => {
        const { topics: metadata } = await admin.fetchTopicMetadata({ topics: log });
        return metadata.flatMap((topic) =>
          topic.partitions
            .filter((partition) => partition.leader !== partition.replicas[0])
            .map((partition) => `${topic.name}/${partition.partitionId}`),
        );
      };
      await eventually(async () => ((await unbalanced()).length === 0 ? true : undefined), {
        timeoutMs: 60_000,
        intervalMs: 500,
        message: `node ${node} never took its partitions back`,
      }).catch(async (error: Error) => {
        throw new Error(`${error.message}: ${(await unbalanced()).join(', ')} led by another node`);
      });
      at.rejoined = performance.now();
      // Writes go on with the leadership back where it was.
      await loop.acknowledgedMore(40);
    } finally {
      await loop.stop();
    }

    // Every consumer resumed and reached the end of the log. The end is read again each time: a refused
    // write's send may still land after the loop stopped.
    const behind = async (table: CheckpointTable) => {
      const ends = await admin.fetchTopicOffsets(topics.account);
      const rows = await db
        .selectFrom(table)
        .select(['partition', 'next_offset'])
        .where('topic', '=', topics.account)
        .execute();
      const at = new Map(rows.map((row) => [row.partition, String(row.next_offset)]));
      return ends
        .filter((end) => end.high !== '0' && BigInt(at.get(end.partition) ?? 0) < BigInt(end.high))
        .map((end) => `partition ${end.partition} at ${at.get(end.partition) ?? 'none'} of ${end.high}`);
    };
    for (const table of [
      'projection_checkpoints',
      'inbound_decider_checkpoints',
      'sms_gateway_checkpoints',
    ] as const) {
      // A lookup that fails (a leader being elected) is asked again.
      const caughtUp = async () => ((await behind(table).catch(() => ['?'])).length === 0 ? true : undefined);
      await eventually(caughtUp, {
        timeoutMs: 60_000,
        message: `${table} never reached the end of the log`,
      }).catch(async (error: Error) => {
        throw new Error(`${error.message}: ${(await behind(table)).join(', ')}`);
      });
    }

    const { outcomes } = loop;
    // Every refusal a 503 with Retry-After; every acknowledged write's events on the log once and in
    // the read models. A write whose send the dead leader took is refused past its bound, and may land
    // all the same.
    const accounting = await accountWrites(sys.services, outcomes, accounts, { refusedMayLand: true });
    expect(accounting.wrongRefusals).toEqual([]);
    expect(accounting.misplaced).toEqual([]);
    expect(accounting.duplicateIds).toEqual([]);
    expect(accounting.inReadModels).toBe(accounting.onTheLog);
    // Every event applied once, each account's in log order, through the leader's death.
    const { appliedTwice, applied, outOfOrder } = await applicationOf(db, accounting.events);
    expect(appliedTwice).toEqual([]);
    expect(applied).toBe(accounting.events.length);
    expect(outOfOrder).toEqual([]);
    const imports = accounting.acknowledged.filter((outcome) => outcome.op !== 'message');
    const unread = imports.filter((outcome) => outcome.readBack !== true);
    expect(unread.map((outcome) => `${outcome.account} ${outcome.phones[0]}`)).toEqual([]);

    // The outage as the writers to the killed leader's partitions saw it.
    const onAffected = outcomes.filter((outcome) => affected.has(outcome.account));
    const outage = longestUnavailability(onAffected);
    const firstAck = Math.min(
      ...onAffected.filter((o) => o.status < 300 && o.sentAt > at.killed).map((o) => o.answeredAt),
    );
    const partitions = new Set([...affected].map(partitionOf)).size;
    console.warn(
      accountingReport(
        `kill -9 of node ${node}, leader of the busiest account partition (${busiest}) and of ${partitions} of ${accountTopic!.partitions.length}, under 16 writers:`,
        accounting,
        [
          `  events applied ${applied}, applied twice ${appliedTwice.length}, out of log order ${outOfOrder.length} accounts; read-your-writes: ${imports.length} acknowledged imports read back, ${unread.length} not found`,
          `  on the killed leader's partitions (${affected.size} accounts): ${onAffected.length} writes, ${onAffected.filter((o) => o.status >= 300).length} refused; longest unavailability ${outage.gapMs} ms; first acknowledgement of a write sent after the kill ${Math.round(firstAck - at.killed)} ms after it`,
          `  node dead ${Math.round(at.restarted - at.killed)} ms; restarted, every partition's replicas in sync and its leadership back ${Math.round(at.rejoined - at.restarted)} ms later`,
        ],
      ),
    );
    expect(outage.gapMs).toBeLessThanOrEqual(OUTAGE_BOUND_MS);
  }, 300_000);
});
