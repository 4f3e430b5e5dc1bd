import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { sql } from 'kysely';
import { accountEvents, eventually } from '@leadline/test-kit';
import { system, acme, useLeadsSystem, newAccount } from './leads-system';

useLeadsSystem();

/** How many commands of this process went through `stage` so far (its metrics). */
async function commandsThrough(stage: string): Promise<number> {
  const text = (await system.app.inject({ method: 'GET', url: '/metrics' })).body;
  const series = `leadline_command_stage_duration_seconds_count{stage="${stage}"} `;
  const line = text.split('\n').find((candidate) => candidate.startsWith(series));
  return line ? Number(line.slice(series.length)) : 0;
}

const positionOf = async (streamKey: string) =>
  (
    await sql<{ topic: string; partition: number; next_offset: string }>`
    select topic, partition, next_offset from stream_positions where stream_key = ${streamKey}`.execute(
      system.services.db,
    )
  ).rows[0];

const intentsOf = async (streamKey: string) =>
  Number(
    (
      await sql<{
        count: string;
      }>`select count(*) from stream_appends where stream_key = ${streamKey}`.execute(system.services.db)
    ).rows[0]!.count,
  );

/** Holds back the projector's writes to the leads read model (reads go on) until `release`. */
async function holdLeadsProjection() {
  const locker = new pg.Client({ connectionString: system.env.config.DATABASE_URL });
  await locker.connect();
  await locker.query('begin');
  await locker.query('lock table read_model.leads in share mode');
  return async () => {
    await locker.query('rollback');
    await locker.end();
  };
}

describe("a command decides on its stream's recorded position", () => {
  it("records every append's position and leaves no intent behind, facts and commands alike", async () => {
    const account = await newAccount();
    expect((await acme.post(`/accounts/${account}/leads`, { phone: '+15125550901' })).status).toBe(201);
    // The partners' registrations (plain facts) and these commands each left their stream's position.
    const { count: partnerStreams } = (
      await sql<{
        count: string;
      }>`select count(*) from stream_positions where topic = ${system.services.topics.partner}`.execute(
        system.services.db,
      )
    ).rows[0]!;
    expect(Number(partnerStreams)).toBeGreaterThanOrEqual(2);
    const position = await positionOf(account);
    expect(position?.topic).toBe(system.services.topics.account);
    // The import was the last write to its partition: its position is the partition's end.
    const offsets = await system.services.admin.fetchTopicOffsets(system.services.topics.account);
    expect(offsets.find((entry) => entry.partition === position!.partition)?.high).toBe(
      position!.next_offset,
    );
    expect(
      Number(
        (await sql<{ count: string }>`select count(*) from stream_appends`.execute(system.services.db))
          .rows[0]!.count,
      ),
    ).toBe(0);
  });

  it("waits for the projector to reach the stream's last append, without asking Kafka where the partition ends", async () => {
    const account = await newAccount();
    const lookupsBefore = await commandsThrough('offsets');
    const decidedBefore = await commandsThrough('decide');
    for (const phone of ['+15125550911', '+15125550912', '+15125550913']) {
      expect((await acme.post(`/accounts/${account}/leads`, { phone })).status).toBe(201);
    }
    expect(await commandsThrough('decide')).toBe(decidedBefore + 3);
    expect(await commandsThrough('offsets')).toBe(lookupsBefore);
    expect((await acme.get(`/accounts/${account}/leads`)).body.total).toBe(3);
  });

  it("asks Kafka and waits for the partition's end when an append of the stream is unrecorded, so it decides on that append's events", async () => {
    const account = await newAccount();
    const recorded = BigInt((await positionOf(account))!.next_offset);
    const release = await holdLeadsProjection();
    let first: ReturnType<typeof acme.post> | undefined;
    let second: ReturnType<typeof acme.post> | undefined;
    try {
      // Appended and recorded; its answer waits for the projector, which is held back.
      first = acme.post(`/accounts/${account}/leads`, { phone: '+15125550921' });
      await eventually(
        async () => (BigInt((await positionOf(account))!.next_offset) > recorded ? true : undefined),
        {
          message: 'the first import never recorded its append',
        },
      );
      // As its writer would have left it had it died between the send and the recording: the event on
      // the log, the intent standing, the position where it was.
      await sql`update stream_positions set next_offset = ${recorded.toString()} where stream_key = ${account}`.execute(
        system.services.db,
      );
      await sql`insert into stream_appends (append_id, stream_key) values (gen_random_uuid(), ${account})`.execute(
        system.services.db,
      );
      const [lookupsBefore, decidedBefore] = [
        await commandsThrough('offsets'),
        await commandsThrough('decide'),
      ];
      // In bulk: single imports into one account queue behind the first one's answer.
      second = acme.post(`/accounts/${account}/leads/bulk`, {
        leads: [{ phone: '+15125550921', name: 'Ana Diaz' }],
      });
      // It asks Kafka and waits for the projector, held back; deciding now would be deciding blind.
      await eventually(
        async () =>
          (await commandsThrough('offsets')) > lookupsBefore ||
          (await commandsThrough('decide')) > decidedBefore
            ? true
            : undefined,
        { message: 'the second import neither asked Kafka nor decided' },
      );
    } finally {
      await release();
    }
    expect((await first).body.action).toBe('created');
    // Decided once the projector had applied the first import: the lead is found, not created again.
    expect((await second!).body).toMatchObject({ imported: 0, updated: 1, skipped: 0 });
    const created = (await accountEvents(system.services)).filter(
      (event) => event.type === 'lead.created' && event.account_id === account,
    );
    expect(created).toHaveLength(1);
  });

  it('clears an intent left long ago by the next append of its stream, and decides without Kafka again', async () => {
    const account = await newAccount();
    await sql`insert into stream_appends (append_id, stream_key, started_at)
      values (gen_random_uuid(), ${account}, now() - interval '11 minutes')`.execute(system.services.db);
    const lookupsBefore = await commandsThrough('offsets');
    expect((await acme.post(`/accounts/${account}/leads`, { phone: '+15125550931' })).status).toBe(201);
    expect(await commandsThrough('offsets')).toBe(lookupsBefore + 1);
    expect(await intentsOf(account)).toBe(0);
    expect((await acme.post(`/accounts/${account}/leads`, { phone: '+15125550932' })).status).toBe(201);
    expect(await commandsThrough('offsets')).toBe(lookupsBefore + 1);
  });

  it('keeps a recent intent of its stream: its append may still land', async () => {
    const account = await newAccount();
    await sql`insert into stream_appends (append_id, stream_key, started_at)
      values (gen_random_uuid(), ${account}, now() - interval '1 minute')`.execute(system.services.db);
    const lookupsBefore = await commandsThrough('offsets');
    expect((await acme.post(`/accounts/${account}/leads`, { phone: '+15125550941' })).status).toBe(201);
    expect((await acme.post(`/accounts/${account}/leads`, { phone: '+15125550942' })).status).toBe(201);
    expect(await commandsThrough('offsets')).toBe(lookupsBefore + 2);
    expect(await intentsOf(account)).toBe(1);
  });

  it('trusts no position after a crash emptied the tables until an append sent once every lost intent has landed', async () => {
    const account = await newAccount();
    expect((await acme.post(`/accounts/${account}/leads`, { phone: '+15125550951' })).status).toBe(201);
    // What crash recovery does to unlogged tables.
    await sql`truncate stream_positions, stream_appends, stream_positions_kept`.execute(system.services.db);
    const lookupsBefore = await commandsThrough('offsets');
    for (const phone of ['+15125550952', '+15125550953']) {
      expect((await acme.post(`/accounts/${account}/leads`, { phone })).status).toBe(201);
    }
    // Both asked Kafka: the first found no position, the second one recorded too soon after the crash.
    expect(await commandsThrough('offsets')).toBe(lookupsBefore + 2);
    // Ten minutes on: the appends recorded since were sent after any lost one landed.
    await sql`update stream_positions_kept set kept_since = kept_since - interval '11 minutes'`.execute(
      system.services.db,
    );
    expect((await acme.post(`/accounts/${account}/leads`, { phone: '+15125550954' })).status).toBe(201);
    expect(await commandsThrough('offsets')).toBe(lookupsBefore + 2);
    expect((await acme.get(`/accounts/${account}/leads`)).body.total).toBe(4);
  });
});
