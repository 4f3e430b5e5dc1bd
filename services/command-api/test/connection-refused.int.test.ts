import {
  createCommandBus,
  createDb,
  createKafka,
  newUuid,
  systemClock,
  type Database,
} from '@leadline/runtime';
import type { Kysely } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountEvents, eventually, logSize } from '@leadline/test-kit';
import { partnerClient, type PartnerClient } from '../../../system-test/client';
import { startSystem, type TestSystem } from '../../../system-test/system';

let system: TestSystem;
let acme: PartnerClient;
let key: string;
let account: string;
/** A role the database refuses every connection to, as it refuses one past `max_connections`. */
let refusedRole: string;
let refusedUrl: string;
const pools: Kysely<Database>[] = [];

async function asAdmin(statement: string) {
  const admin = new pg.Client({ connectionString: system.env.config.DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(statement);
  } finally {
    await admin.end();
  }
}

beforeAll(async () => {
  system = await startSystem();
  key = await system.createPartner('Acme CRM');
  acme = partnerClient(system.app, key);
  account = (await acme.post('/accounts', { name: 'Busy database' })).body.id as string;
  // Roles are the server's, not the test database's: a name of this file's own, dropped afterwards.
  refusedRole = `refused_${system.env.config.TOPIC_PREFIX.replace(/\W/g, '_')}`.slice(0, 60);
  await asAdmin(`create role "${refusedRole}" login connection limit 0`);
  const url = new URL(system.env.config.DATABASE_URL);
  url.username = refusedRole;
  url.password = '';
  refusedUrl = url.toString();
});
afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.destroy()));
  // Before the system closes: closing it drops the database the admin connects to.
  if (refusedRole) await asAdmin(`drop role if exists "${refusedRole}"`);
  await system?.close();
});

function pool(url: string, options: { maxConnections?: number; connectMs?: number } = {}) {
  const db = createDb(url, {
    maxConnections: options.maxConnections ?? 2,
    timeouts: { connectMs: options.connectMs ?? 2_000 },
  });
  pools.push(db);
  return db;
}

function commandsOver(db: Kysely<Database>, kafka = system.services.kafka) {
  return createCommandBus({
    ...system.services,
    db,
    kafka,
    clock: systemClock,
    newId: newUuid,
    projectionWaitMs: 5_000,
    eventLogTimeoutMs: 3_000,
  });
}

const phone = (n: number) => `+1512555${String(n).padStart(4, '0')}`;

describe('a database that refuses a connection ("too many clients")', () => {
  it('answers a read 503 database_busy with Retry-After, not 500', async () => {
    const app = await system.appWith({ db: pool(refusedUrl) });
    const answer = await partnerClient(app, key).get(`/accounts/${account}/leads`);
    expect(answer.status).toBe(503);
    expect(answer.body.code).toBe('database_busy');
    expect(answer.headers['retry-after']).toBe('1');
  });

  it('answers a write 503 database_busy with Retry-After, and writes nothing', async () => {
    const commands = commandsOver(pool(refusedUrl));
    try {
      const app = await system.appWith({ commands });
      const before = await logSize(system.services);
      const answer = await partnerClient(app, key).post(`/accounts/${account}/leads`, {
        phone: phone(1),
        name: 'Never',
      });
      expect(answer.status).toBe(503);
      expect(answer.body.code).toBe('database_busy');
      expect(answer.headers['retry-after']).toBe('1');
      expect(await logSize(system.services)).toBe(before);
    } finally {
      await commands.close();
    }
  });
});

describe('a pool with no connection free in time', () => {
  it('answers reads and writes 503 database_busy with Retry-After while its one connection is held', async () => {
    const tiny = pool(system.env.config.DATABASE_URL, { maxConnections: 1, connectMs: 1_000 });
    const commands = commandsOver(tiny);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held!: () => void;
    const holding = new Promise<void>((resolve) => (held = resolve));
    // Holds the pool's only connection until the requests have been answered.
    const holder = tiny.connection().execute(async () => {
      held();
      await released;
    });
    await holding;
    try {
      const app = await system.appWith({ db: tiny, commands });
      const client = partnerClient(app, key);
      const read = await client.get(`/accounts/${account}/leads`);
      expect(read.status).toBe(503);
      expect(read.body.code).toBe('database_busy');
      expect(read.headers['retry-after']).toBe('1');
      const app2 = await system.appWith({ commands });
      const write = await partnerClient(app2, key).post(`/accounts/${account}/leads`, {
        phone: phone(2),
        name: 'Never',
      });
      expect(write.status).toBe(503);
      expect(write.body.code).toBe('database_busy');
      expect(write.headers['retry-after']).toBe('1');
    } finally {
      release();
      await holder;
      await commands.close();
    }
  });
});

/**
 * Ends, as a restart or a failover does, the sessions of this database that `which` selects from
 * pg_stat_activity (`a`), waiting until each is gone.
 */
async function terminate(which: string) {
  const admin = new pg.Client({ connectionString: system.env.config.DATABASE_URL });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ ended: boolean }>(
      `select pg_terminate_backend(a.pid, 5000) as ended from pg_stat_activity a
       where a.datname = current_database() and a.pid <> pg_backend_pid() and ${which}`,
    );
    return rows.length;
  } finally {
    await admin.end();
  }
}

/** Runs `request` while the leads read model is locked, and ends the session it waits in. */
async function lostWhileWaiting<T>(request: () => Promise<T>): Promise<T> {
  const locker = new pg.Client({ connectionString: system.env.config.DATABASE_URL });
  await locker.connect();
  try {
    await locker.query('begin');
    await locker.query('lock table read_model.leads in access exclusive mode');
    const answer = request();
    await eventually(async () => ((await terminate(`a.wait_event_type = 'Lock'`)) > 0 ? true : undefined), {
      message: 'the request never waited on the lock',
    });
    return await answer;
  } finally {
    await locker.query('rollback').catch(() => undefined);
    await locker.end();
  }
}

describe('a connection lost mid-request (a restart, a failover, a terminated backend)', () => {
  it('answers a read 503 database_busy with Retry-After, not 500', async () => {
    const app = await system.appWith({ db: pool(system.env.config.DATABASE_URL) });
    const answer = await lostWhileWaiting(() => partnerClient(app, key).get(`/accounts/${account}/leads`));
    expect(answer.status).toBe(503);
    expect(answer.body.code).toBe('database_busy');
    expect(answer.headers['retry-after']).toBe('1');
  });

  it('refuses a write lost before its append 503 database_busy with Retry-After, and writes nothing', async () => {
    const commands = commandsOver(pool(system.env.config.DATABASE_URL));
    try {
      const app = await system.appWith({ commands });
      const before = await logSize(system.services);
      const answer = await lostWhileWaiting(() =>
        partnerClient(app, key).post(`/accounts/${account}/leads`, { phone: phone(3), name: 'Never' }),
      );
      expect(answer.status).toBe(503);
      expect(answer.body.code).toBe('database_busy');
      expect(answer.headers['retry-after']).toBe('1');
      expect(await logSize(system.services)).toBe(before);
    } finally {
      await commands.close();
    }
  });

  it('acknowledges a write whose connection is lost during its append: its events are on the log once', async () => {
    // Each append first ends the session of the command holding its stream's lock, so the append
    // lands and the transaction's COMMIT meets a lost connection.
    const kafka = createKafka(system.env.config.KAFKA_BROKERS, 'connection-lost');
    const producer = kafka.producer.bind(kafka);
    kafka.producer = (options) => {
      const real = producer(options);
      const sendBatch = real.sendBatch.bind(real);
      real.sendBatch = async (batch) => {
        await terminate(`a.pid in (select pid from pg_locks where locktype = 'advisory' and granted)`);
        return sendBatch(batch);
      };
      return real;
    };
    const commands = commandsOver(pool(system.env.config.DATABASE_URL), kafka);
    try {
      const app = await system.appWith({ commands });
      const answer = await partnerClient(app, key).post(`/accounts/${account}/leads`, {
        phone: phone(4),
        name: 'Landed',
      });
      expect(answer.status).toBe(201);
      expect((await acme.get(`/accounts/${account}/leads/${encodeURIComponent(phone(4))}`)).status).toBe(200);
      const created = (await accountEvents(system.services)).filter(
        (event) => event.type === 'lead.created' && (event.data as { phone: string }).phone === phone(4),
      );
      expect(created).toHaveLength(1);
    } finally {
      await commands.close();
    }
  });
});
