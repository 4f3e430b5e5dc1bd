import { topicNames } from '@leadline/events';
import {
  createDb,
  listParked,
  LOG_FENCE_LOCK,
  migrateLog,
  migrationStatus,
  readGenerations,
  requestRetry,
  retireGeneration,
  skipParked,
  type LogTransform,
  type MigrationReport,
} from '@leadline/runtime';
import { eventually } from '@leadline/test-kit';
import type { Consumer } from 'kafkajs';
import { sql } from 'kysely';
import { describe, expect, it, onTestFinished } from 'vitest';
import { postInboundSms } from '../../../system-test/inbound-sms';
import {
  fault,
  idsByKey,
  migrationDeps,
  partner,
  readModels,
  recordsOf,
  startDecider,
  startWriteLoop,
  stopDecider,
  system,
  useMigrationSystem,
  type LogRecord,
} from './log-migration-system';

useMigrationSystem();

describe('migrating the log to a new generation', () => {
  it('refuses commands with 503 log_migrating while the fence is up, writing nothing; facts wait for it within their bound', async () => {
    const { body: account } = await partner.post('/accounts', { name: 'Fenced Co' });
    const before = (await readGenerations(system.services.db)).find((g) => g.state === 'active')!;
    const fence = await createDb(system.env.config.DATABASE_URL, { maxConnections: 1 });
    await fence.connection().execute(async (connection) => {
      await sql`select pg_advisory_lock(${LOG_FENCE_LOCK})`.execute(connection);
      try {
        const refused = await partner.post(`/accounts/${account.id}/leads`, { phone: '+15125550901' });
        expect(refused.status).toBe(503);
        expect(refused.body.code).toBe('log_migrating');
        expect(refused.headers['retry-after']).toBeDefined();
        // An inbound SMS (a fact Twilio would not send again) waits for the fence, then is refused too.
        const started = performance.now();
        const inbound = await postInboundSms(system, {
          sid: 'SMfenced0000000000000000000000001',
          from: '+15125550902',
          to: account.phone_number,
          body: 'hello',
        });
        const waited = performance.now() - started;
        expect(inbound.statusCode).toBe(503);
        expect(inbound.json().code).toBe('log_migrating');
        // Within the log's bound (EVENT_LOG_TIMEOUT_MS, 3 s) and the time it takes to answer.
        expect(waited).toBeGreaterThanOrEqual(2_900);
        expect(waited).toBeLessThan(6_000);
      } finally {
        await sql`select pg_advisory_unlock(${LOG_FENCE_LOCK})`.execute(connection);
      }
    });
    await fence.destroy();
    // Nothing was written; once the fence is down the same requests succeed.
    const events = await recordsOf(topicNames(system.env.config.TOPIC_PREFIX, before.generation).account);
    expect(events.filter((record) => JSON.stringify(record.event.data).includes('5550901'))).toEqual([]);
    expect(events.filter((record) => JSON.stringify(record.event.data).includes('SMfenced'))).toEqual([]);
    expect((await partner.post(`/accounts/${account.id}/leads`, { phone: '+15125550901' })).status).toBe(201);
  });

  it('moves from 8 to 32 partitions under a write loop: nothing lost, nothing applied twice, order per account kept, every read model equal to a rebuild', async () => {
    const prefix = system.env.config.TOPIC_PREFIX;
    const oldTopics = topicNames(prefix, 1);
    const newTopics = topicNames(prefix, 2);

    // Records parked before the migration: one skipped by an operator, one still parked with a record
    // held behind it.
    const skippedAccount = (await partner.post('/accounts', { name: 'Skipped Co' })).body.id as string;
    const heldAccount = (await partner.post('/accounts', { name: 'Held Co' })).body.id as string;
    expect(
      (await partner.post(`/accounts/${skippedAccount}/leads`, { phone: '+15125550911', name: 'boom' }))
        .status,
    ).toBe(201);
    expect(
      (await partner.post(`/accounts/${heldAccount}/leads`, { phone: '+15125550912', name: 'boom' })).status,
    ).toBe(201);
    const parkedBefore = await eventually(async () => {
      const rows = (await listParked(system.services.db)).filter((row) => row.status === 'parked');
      return rows.length === 2 ? rows : undefined;
    });
    const skippedAddress = parkedBefore.find((row) => row.stream_key === skippedAccount)!;
    expect(await skipParked(system.services.db, { ...skippedAddress }, 'test: never apply', new Date())).toBe(
      true,
    );
    await system.services.commands.append({
      stream: { topic: 'account', accountId: heldAccount },
      context: { partnerId: 'partner', actor: { kind: 'system', service: 'test' }, correlationId: 'held' },
      events: [{ type: 'account.updated', data: { name: 'Held Co, renamed' } }],
      readYourWrites: false,
    });
    await eventually(async () =>
      (await listParked(system.services.db)).some(
        (row) => row.stream_key === heldAccount && row.status === 'held',
      )
        ? true
        : undefined,
    );

    // The write loop: each client its own account, writing one request after another.
    const clients = 6;
    const accounts: { id: string; number: string }[] = [];
    for (let client = 0; client < clients; client++) {
      const { body } = await partner.post('/accounts', { name: `Loop ${client}` });
      accounts.push({ id: body.id, number: body.phone_number });
    }
    const writes = startWriteLoop(accounts);
    const { outcomes, acknowledged } = writes;
    const analyst: Consumer = system.services.kafka.consumer({ groupId: `${prefix}analyst` });
    const migrationLog: string[] = [];
    let report: MigrationReport | undefined;
    try {
      await eventually(async () => (acknowledged(false) >= 120 ? true : undefined), { timeoutMs: 120_000 });
      // A consumer that is down during the cutover, and a stock consumer group still on the old topics.
      await stopDecider();
      await analyst.connect();
      await analyst.subscribe({ topic: oldTopics.account, fromBeginning: true });
      await analyst.run({ eachMessage: async () => undefined });

      report = await migrateLog(migrationDeps(migrationLog), { partitions: 32, batchRecords: 500 });
      writes.cutOver();
      expect(report).toMatchObject({ from: 1, to: 2 });
      await eventually(async () => (acknowledged(true) >= 120 ? true : undefined), { timeoutMs: 120_000 });
    } finally {
      await writes.stop();
    }
    const disconnectAnalyst = () => analyst.disconnect().catch(() => undefined);
    onTestFinished(disconnectAnalyst);

    // The old generation cannot be retired while anyone still reads it, and says who.
    await expect(retireGeneration(migrationDeps([]))).rejects.toThrow(
      new RegExp(
        `inbound_decider .* is still on generation 1[^]*consumer group ${prefix}analyst still reads`,
      ),
    );
    await startDecider();
    // Both consumers read generation 1 to its end, moved over, and reach the end of generation 2.
    const caughtUp = () =>
      eventually(
        async () => {
          const status = await migrationStatus(migrationDeps([]));
          const moved = ['projector', 'inbound_decider'].every((name) =>
            status.some((line) => line.startsWith(`consumer ${name}: on generation 2, 0 records behind`)),
          );
          return moved ? status : undefined;
        },
        { timeoutMs: 60_000, message: 'the consumers never reached the end of generation 2' },
      );
    await caughtUp();
    const sids = outcomes.filter((o) => o.op === 'inbound' && o.status === 200).map((o) => o.sid!);
    await eventually(
      async () => {
        const { rows } = await sql<{ count: string }>`
          select count(*)::text as count from inbound_receipts
          where message_sid in (${sql.join(sids)}) and decided_at is not null`.execute(system.services.db);
        return Number(rows[0]!.count) === sids.length ? true : undefined;
      },
      { timeoutMs: 60_000, message: 'inbound SMS acknowledged before the cutover were never decided' },
    );
    await caughtUp();

    const generations = await readGenerations(system.services.db);
    const [first, second] = generations;
    expect(first).toMatchObject({ generation: 1, state: 'draining' });
    expect(second).toMatchObject({ generation: 2, state: 'active', partitions: { account: 32, partner: 2 } });
    const oldRecords = [...(await recordsOf(oldTopics.account)), ...(await recordsOf(oldTopics.partner))];
    const newRecords = [...(await recordsOf(newTopics.account)), ...(await recordsOf(newTopics.partner))];
    expect((await system.services.admin.fetchTopicOffsets(newTopics.account)).length).toBe(32);
    const startOf = (record: LogRecord) => BigInt(second!.startOffsets![record.topic]![record.partition]!);
    const copied = newRecords.filter((record) => record.origin !== undefined);
    const live = newRecords.filter((record) => record.origin === undefined);
    // The copied history is everything before where live writes began, and only that.
    for (const record of copied) expect(record.offset).toBeLessThan(startOf(record));
    for (const record of live) expect(record.offset).toBeGreaterThanOrEqual(startOf(record));

    // Order per account (and per partner) kept: the copy holds each key's events in the order the
    // old generation holds them, byte for byte, and what follows them was written after the cutover.
    const oldByPosition = new Map(
      oldRecords.map((record) => [`${record.topic}:${record.partition}:${record.offset}`, record]),
    );
    for (const record of copied)
      expect(oldByPosition.get(record.origin!)?.value.equals(record.value)).toBe(true);
    expect(copied.length).toBe(oldRecords.length);
    expect(idsByKey(copied)).toEqual(idsByKey(oldRecords));
    const oldIds = new Set(oldRecords.map((record) => record.event.id));
    expect(live.filter((record) => oldIds.has(record.event.id))).toEqual([]);

    // Every acknowledged write is on the new generation exactly once; no refused write is anywhere.
    const ofType = (type: string) => newRecords.filter((record) => record.event.type === type);
    const count = (type: string, field: string, value: string) =>
      ofType(type).filter((record) => (record.event.data as Record<string, unknown>)[field] === value).length;
    const ids = newRecords.map((record) => record.event.id);
    expect(new Set(ids).size).toBe(ids.length);
    let found = 0;
    for (const outcome of outcomes) {
      const expected = outcome.status < 300 ? 1 : 0;
      for (const phone of outcome.phones) {
        const created = ofType('lead.created').filter(
          (record) =>
            record.event.account_id === outcome.account &&
            (record.event.data as { phone: string }).phone === phone,
        ).length;
        expect(created, `${outcome.op} ${phone} answered ${outcome.status}`).toBe(expected);
        found += created;
      }
      if (outcome.op === 'message' && outcome.status < 300) {
        expect(count('message.outbound_requested', 'message_id', outcome.messageId!)).toBe(1);
        found++;
      }
      if (outcome.op === 'inbound') {
        expect(count('message.inbound_received', 'provider_message_id', outcome.sid!)).toBe(expected);
        // Decided once, whichever generation the inbound decider read it on.
        expect(count('message.received', 'provider_message_id', outcome.sid!)).toBe(expected);
        found += expected;
      }
    }

    // Every refusal is a 503 with Retry-After, answered within its bound.
    const refused = outcomes.filter((o) => o.status >= 300);
    for (const outcome of refused) {
      expect(outcome.status, `${outcome.op} answered ${outcome.status} ${outcome.code}`).toBe(503);
      expect(outcome.code).toBe('log_migrating');
      expect(outcome.retryAfter).toBeDefined();
      expect(outcome.ms).toBeLessThan(6_000);
    }

    // Usage counters count each imported lead and each received message once.
    const { rows: usage } = await sql<{
      account_id: string;
      leads_imported: number;
      messages_received: number;
    }>`
      select account_id, sum(leads_imported)::int as leads_imported, sum(messages_received)::int as messages_received
      from read_model.usage_counters group by account_id`.execute(system.services.db);
    for (const account of accounts) {
      const row = usage.find((candidate) => candidate.account_id === account.id);
      const imported = ofType('lead.created').filter(
        (record) =>
          record.event.account_id === account.id &&
          (record.event.data as { origin: string }).origin !== 'inbound_message',
      ).length;
      const received = ofType('message.received').filter(
        (record) => record.event.account_id === account.id,
      ).length;
      expect(row).toMatchObject({ leads_imported: imported, messages_received: received });
    }

    // The parked record and the one held behind it moved to their copies on the new generation; a
    // record of the same account written there waits behind them; a retry applies all three in order.
    const heldNow = (await listParked(system.services.db)).filter((row) => row.stream_key === heldAccount);
    const copyOf = (status: string) => heldNow.find((row) => row.status === status)!;
    expect(copyOf('parked').topic).toBe(newTopics.account);
    expect(copyOf('held').topic).toBe(newTopics.account);
    await system.services.commands.append({
      stream: { topic: 'account', accountId: heldAccount },
      context: { partnerId: 'partner', actor: { kind: 'system', service: 'test' }, correlationId: 'held-2' },
      events: [{ type: 'account.updated', data: { name: 'Held Co, after the cutover' } }],
      readYourWrites: false,
    });
    await eventually(async () => {
      const rows = (await listParked(system.services.db)).filter((row) => row.stream_key === heldAccount);
      return rows.length === 3 && rows.every((row) => row.topic === newTopics.account) ? true : undefined;
    });
    fault.on = false;
    expect(await requestRetry(system.services.db, { ...copyOf('parked') }, new Date())).toBe(true);
    await eventually(async () => ((await listParked(system.services.db)).length === 0 ? true : undefined));
    const { body: held } = await partner.get(`/accounts/${heldAccount}`);
    expect(held.name).toBe('Held Co, after the cutover');
    expect((await partner.get(`/accounts/${heldAccount}/leads/%2B15125550912`)).status).toBe(200);
    expect((await partner.get(`/accounts/${skippedAccount}/leads/%2B15125550911`)).status).toBe(404);

    // Nothing applied twice, nothing skipped: every event the projector applied, it applied once, and
    // it applied every event of the new generation (the skipped record aside).
    const { rows: applied } = await sql<{ event_id: string; times: string }>`
      select event_id, count(*)::text as times from public.test_applied_events group by event_id`.execute(
      system.services.db,
    );
    expect(applied.filter((row) => row.times !== '1')).toEqual([]);
    const skippedEvent = copied.find(
      (record) => record.key === skippedAccount && record.event.type === 'lead.created',
    )!.event.id;
    const everyId = (await recordsOf(newTopics.account)).concat(await recordsOf(newTopics.partner));
    expect(new Set(applied.map((row) => row.event_id))).toEqual(
      new Set(everyId.map((record) => record.event.id).filter((id) => id !== skippedEvent)),
    );
    // Every read model equals a rebuild from the new generation's offset 0 (the skip included).
    const liveModels = await readModels();
    await system.rebuildReadModels({ groupPrefix: prefix });
    expect(await readModels()).toEqual(liveModels);

    // With nothing left on it, the old generation is retired: its topics are gone.
    await disconnectAnalyst();
    const retired = await retireGeneration(migrationDeps([]));
    expect(retired).toEqual({ generation: 1, topics: Object.values(oldTopics) });
    const remaining = await system.services.admin.listTopics();
    expect(remaining).not.toContain(oldTopics.account);
    expect(remaining).toContain(newTopics.account);
    // Processes follow without a restart: the readiness check reads the new generation's topics.
    await eventually(async () =>
      (await system.app.inject({ method: 'GET', url: '/health/ready' })).statusCode === 200
        ? true
        : undefined,
    );

    const longest = Math.max(0, ...refused.map((o) => o.ms));
    console.warn(
      [
        `log migration 8 -> 32 partitions under ${clients} writers:`,
        `  writes attempted ${outcomes.length}, acknowledged ${outcomes.length - refused.length} (${acknowledged(true)} after the cutover), refused ${refused.length} (503 log_migrating, longest ${Math.round(longest)} ms)`,
        `  fence ${report!.fenceMs} ms; records copied ${copied.length}, written after the cutover ${live.length}`,
        `  acknowledged writes found on the new generation ${found} (each exactly once), refused writes found 0, duplicates 0`,
        `  events applied by the projector ${applied.length}, each once; read models equal to a rebuild`,
        ...migrationLog.map((line) => `  migrate-log: ${line}`),
      ].join('\n'),
    );
  }, 600_000);

  it('moves again, through a transform: the rewritten history is what a rebuild reads, and live consumers apply none of it again', async () => {
    // Continues from the generation the previous test moved the log to.
    const prefix = system.env.config.TOPIC_PREFIX;
    const [previous, next] = [topicNames(prefix, 2), topicNames(prefix, 3)];
    const shout: LogTransform = {
      name: 'test-uppercase-lead-names',
      undecodable: 'copy',
      apply: (event) =>
        event.type === 'lead.created' && event.data.name
          ? { ...event, data: { ...event.data, name: event.data.name.toUpperCase() } }
          : event,
    };
    const report = await migrateLog(migrationDeps([]), { partitions: 32, transform: shout });
    expect(report).toMatchObject({ from: 2, to: 3 });
    const created = await partner.post('/accounts', { name: 'After Co' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const account = created.body;
    expect(
      (await partner.post(`/accounts/${account.id}/leads`, { phone: '+15125550931', name: 'Zoe' })).status,
    ).toBe(201);
    // Written after the cutover, so not through the transform; read back at once.
    expect((await partner.get(`/accounts/${account.id}/leads/%2B15125550931`)).body.name).toBe('Zoe');

    // The copy holds the same events in the same order per key, each lead's name rewritten.
    const before = [...(await recordsOf(previous.account)), ...(await recordsOf(previous.partner))];
    const after = [...(await recordsOf(next.account)), ...(await recordsOf(next.partner))];
    const copies = after.filter((record) => record.origin !== undefined);
    expect(idsByKey(copies)).toEqual(idsByKey(before));
    const named = copies.filter((record) => record.event.type === 'lead.created' && record.event.data.name);
    expect(named.length).toBeGreaterThan(10);
    for (const record of named) {
      const name = (record.event.data as { name: string }).name;
      expect(name).toBe(name.toUpperCase());
    }

    const sample = named.find((record) => (record.event.data as { name: string }).name.startsWith('LEAD '))!;
    const sampleLead = `/accounts/${sample.event.account_id}/leads/${encodeURIComponent((sample.event.data as { phone: string }).phone)}`;
    const sampleName = (sample.event.data as { name: string }).name;

    // The live projector read generation 2 to its end and applied none of the copies.
    await eventually(async () => {
      const status = await migrationStatus(migrationDeps([]));
      return status.some((line) => line.startsWith('consumer projector: on generation 3, 0 records behind'))
        ? true
        : undefined;
    });
    const { rows: twice } = await sql<{ event_id: string }>`
      select event_id from public.test_applied_events group by event_id having count(*) > 1`.execute(
      system.services.db,
    );
    expect(twice).toEqual([]);
    // The live read models keep what they applied: the rewritten history is not applied again.
    expect((await partner.get(sampleLead)).body.name).toBe(sampleName.replace('LEAD', 'Lead'));
    // A rebuild reads the rewritten history.
    await eventually(async () => (system.services.topics.account === next.account ? true : undefined));
    await system.rebuildReadModels({ groupPrefix: prefix });
    expect((await partner.get(sampleLead)).body.name).toBe(sampleName);
    expect((await partner.get(`/accounts/${account.id}/leads/%2B15125550931`)).body.name).toBe('Zoe');
  }, 300_000);
});
