import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { DomainEvent } from '@leadline/events';
import { projections, startProjector, type RunningProjector } from '@leadline/projector';
import { createDb, type Database } from '@leadline/runtime';
import { eventually } from '@leadline/test-kit';
import kafkajs from 'kafkajs';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partnerClient } from '../../../system-test/client';
import {
  appliedEvents,
  eventsAppliedTwice,
  eventsInApplicationOrder,
  readModelSnapshot,
  recordAppliedEvents,
} from '../../../system-test/log';
import { startSystem, type TestSystem } from '../../../system-test/system';
import { startWriteLoop } from '../../../system-test/write-loop';
import { accountWrites, accountingReport } from '../../../system-test/accounting';

const { AssignerProtocol } = kafkajs;
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

let system: TestSystem;
const inProcess: { projector: RunningProjector; db: Kysely<Database> }[] = [];
let killed: ChildProcess | undefined;
const killedOutput: string[] = [];

beforeAll(async () => {
  // A command waits up to 30 s for its events to be projected (what the cluster tests give it too): an
  // instance killed without leaving its group holds its partitions until its session times out (6 s).
  system = await startSystem({
    projector: false,
    inboundDecider: false,
    awaitInbound: false,
    projectionWaitMs: 30_000,
  });
  await recordAppliedEvents(system.services.db);
}, 120_000);
afterAll(async () => {
  killed?.kill('SIGKILL');
  for (const { projector, db } of inProcess) {
    await projector.stop().catch(() => undefined);
    await db.destroy();
  }
  await system?.close();
});

/** A projector instance in this process, in the projector's consumer group. */
async function startInstance() {
  const db = createDb(system.env.config.DATABASE_URL, { maxConnections: 3 });
  const projector = await startProjector({
    ...system.services,
    db,
    groupId: system.projectorGroupId,
    projections: [...projections, appliedEvents],
    concurrency: 2,
  });
  const instance = { projector, db };
  inProcess.push(instance);
  return instance;
}

/** A projector instance in a process of its own, to be killed with SIGKILL. */
function startProcessInstance(): ChildProcess {
  const { config } = system.env;
  const child = spawn(process.execPath, ['--import', 'tsx', 'system-test/projector-process.ts'], {
    cwd: repoRoot,
    env: {
      ...process.env,
      DATABASE_URL: config.DATABASE_URL,
      KAFKA_BROKERS: config.KAFKA_BROKERS.join(','),
      SCHEMA_REGISTRY_URL: config.SCHEMA_REGISTRY_URL,
      TOPIC_PREFIX: config.TOPIC_PREFIX,
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr!.on('data', (chunk: Buffer) => killedOutput.push(chunk.toString()));
  return child;
}

/**
 * The projector group's members once it is stable with `members` of them: the account partitions of
 * each. `timeoutMs` is longer where a new process must start first (it compiles and connects while the
 * rest of the suite shares the machine).
 */
async function groupSettledAt(members: number, timeoutMs = 60_000) {
  return eventually(
    async () => {
      const {
        groups: [group],
      } = await system.services.admin.describeGroups([system.projectorGroupId]);
      if (group?.state !== 'Stable' || group.members.length !== members) return undefined;
      return group.members.map(
        (member) =>
          AssignerProtocol.MemberAssignment.decode(member.memberAssignment)?.assignment[
            system.services.topics.account
          ] ?? [],
      );
    },
    {
      timeoutMs,
      message: `the projector group never settled at ${members} members\n${killedOutput.join('')}`,
    },
  );
}

describe('scaling the projector under a write loop', () => {
  it('from one instance to three and back: no event applied twice or skipped, order per account kept, every acknowledged import readable at once, read models equal to a rebuild', async () => {
    // One instance projects while the accounts are created (their creation waits for it).
    await startInstance();
    await groupSettledAt(1);
    const partner = partnerClient(system.app, await system.createPartner('Scaling CRM'));
    const accounts: string[] = [];
    for (let n = 0; n < 8; n++) {
      const created = await partner.post('/accounts', { name: `Scaling ${n}` });
      expect(created.status).toBe(201);
      accounts.push(created.body.id);
    }

    const loop = startWriteLoop({ partner, accounts, clients: 16 });
    const assignments: number[][][] = [];
    try {
      await loop.acknowledgedMore(40);
      const second = await startInstance();
      assignments.push(await groupSettledAt(2));
      await loop.acknowledgedMore(40);
      killed = startProcessInstance();
      assignments.push(await groupSettledAt(3, 150_000));
      await loop.acknowledgedMore(40);
      // Back to one: the second leaves gracefully (its batch in flight finished, its group left)...
      await second.projector.stop();
      inProcess.splice(inProcess.indexOf(second), 1);
      await second.db.destroy();
      assignments.push(await groupSettledAt(2));
      await loop.acknowledgedMore(40);
      // ...the third dies mid-work without leaving: its partitions wait for its session to time out.
      killed.kill('SIGKILL');
      await loop.acknowledgedMore(40, 90_000);
    } finally {
      await loop.stop();
    }
    assignments.push(await groupSettledAt(1));
    // Scaling meant something: at three instances each held account partitions of its own.
    expect(assignments[1]!.map((partitions) => partitions.length > 0)).toEqual([true, true, true]);
    expect(assignments[1]!.flat().sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(assignments[3]![0]!.sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);

    // The one left applies the log to its end.
    const { topics, admin, progress } = system.services;
    for (const topic of [topics.account, topics.partner]) {
      const ends = await admin.fetchTopicOffsets(topic);
      const caughtUp = await Promise.all(
        ends.map((end) => progress.waitFor(topic, end.partition, BigInt(end.high), 60_000)),
      );
      expect(caughtUp).not.toContain(false);
    }

    // Every answer was an acknowledgement or a 503 with Retry-After, never a 500; every acknowledged
    // write's events are on the log exactly once, and no refused write's; and in the read models.
    const accounting = await accountWrites(system.services, loop.outcomes, accounts);
    const { acknowledged, events, onTheLog, inReadModels } = accounting;
    expect(accounting.wrongRefusals).toEqual([]);
    expect(accounting.misplaced).toEqual([]);
    expect(accounting.duplicateIds).toEqual([]);
    const importedPhones = acknowledged.flatMap((outcome) => outcome.phones);
    const messageIds = acknowledged.flatMap((outcome) => (outcome.messageId ? [outcome.messageId] : []));
    expect(onTheLog).toBe(importedPhones.length + messageIds.length);
    expect(inReadModels).toBe(onTheLog);

    // Nothing applied twice, nothing skipped, and each account's events applied in log order,
    // whichever instance held its partition when.
    const twice = await eventsAppliedTwice(system.services.db);
    expect(twice).toEqual([]);
    const applied = await eventsInApplicationOrder(system.services.db);
    const byAccount = (list: readonly DomainEvent[]) => {
      const grouped = new Map<string, string[]>();
      for (const event of list) {
        const key = event.account_id ?? '';
        grouped.set(key, grouped.get(key) ?? []);
        grouped.get(key)!.push(event.id);
      }
      return grouped;
    };
    const eventById = new Map(events.map((event) => [event.id, event]));
    const appliedAccountEvents = applied.flatMap((id) => (eventById.has(id) ? [eventById.get(id)!] : []));
    expect(appliedAccountEvents.length).toBe(events.length);
    expect(byAccount(appliedAccountEvents)).toEqual(byAccount(events));

    // Read-your-writes held: every acknowledged import was readable by the GET sent right after it.
    const imports = acknowledged.filter((outcome) => outcome.op !== 'message');
    const unread = imports.filter((outcome) => outcome.readBack !== true);
    expect(unread.map((outcome) => `${outcome.account} ${outcome.phones[0]}`)).toEqual([]);

    // The read models equal a rebuild from offset 0.
    const live = await readModelSnapshot(system.services.db);
    await system.rebuildReadModels();
    expect(await readModelSnapshot(system.services.db)).toEqual(live);

    console.warn(
      accountingReport(
        'projector scaling 1 -> 2 -> 3 -> 2 (one stopped) -> 1 (one killed) under 16 writers:',
        accounting,
        [
          `  events applied ${appliedAccountEvents.length}, applied twice ${twice.length}, in log order per account`,
          `  read-your-writes: ${imports.length} acknowledged imports read back, ${unread.length} not found`,
          `  account partitions per instance: ${assignments.map((members) => members.map((p) => p.length).join('+')).join(' -> ')}`,
        ],
      ),
    );
  }, 300_000);
});
