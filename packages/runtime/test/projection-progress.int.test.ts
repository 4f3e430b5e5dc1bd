import { randomBytes } from 'node:crypto';
import { createTestEnvironment, eventually, type TestEnvironment } from '@leadline/test-kit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, READ_MODEL_SCHEMA } from '../src/db/database';
import { ensureDatabase, migrate } from '../src/db/migrate';
import {
  createProjectionProgress,
  PROGRESS_CHANNEL,
  type PartitionProgress,
} from '../src/projection-progress';

let env: TestEnvironment;
let admin: pg.Client;
// Its own role: a connection limit binds no superuser, and the test must refuse the listener alone.
const role = `leadline_listener_${randomBytes(4).toString('hex')}`;
let listenerUrl: string;

beforeAll(async () => {
  env = await createTestEnvironment();
  await ensureDatabase(env.config.DATABASE_URL);
  await migrate(env.config.DATABASE_URL);
  admin = new pg.Client({ connectionString: env.config.DATABASE_URL });
  await admin.connect();
  await admin.query(`create role ${role} login; grant pg_read_all_data to ${role}`);
  const url = new URL(env.config.DATABASE_URL);
  url.username = role;
  listenerUrl = url.toString();
});
afterAll(async () => {
  await admin?.query(`drop role if exists ${role}`).catch(() => undefined);
  await admin?.end();
  await env?.dispose();
});

const listenerBackend = async () => {
  const { rows } = await admin.query<{ pid: number }>(
    `select pid from pg_stat_activity where usename = $1 and query = $2 and state = 'idle'`,
    [role, `listen ${PROGRESS_CHANNEL}`],
  );
  return rows[0]?.pid;
};

const notifyProgress = (progress: PartitionProgress[]) =>
  admin.query('select pg_notify($1, $2)', [PROGRESS_CHANNEL, JSON.stringify(progress)]);

describe('projection progress', () => {
  it('listens again once the database takes connections again, however long it refused them', async () => {
    const pool = createPool(listenerUrl, { maxConnections: 2 });
    const failures: Error[] = [];
    const progress = await createProjectionProgress(pool, {
      onListenerError: (error) => failures.push(error),
      reconnectBackoff: { minMs: 50, maxMs: 200 },
    });
    const heard: PartitionProgress[][] = [];
    const unsubscribe = progress.subscribe((batch) => heard.push(batch));
    try {
      await notifyProgress([{ topic: 'account', partition: 0, next_offset: '1' }]);
      await eventually(async () => (heard.length === 1 ? true : undefined), {
        message: 'first notification',
      });

      // The listener's backend ends, and the pool's idle ones with it: none is left to listen on.
      await admin.query(`alter role ${role} connection limit 0`);
      expect(await listenerBackend()).toBeDefined();
      await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where usename = $1', [role]);
      // Several attempts to listen again are refused while the limit holds.
      await eventually(
        async () =>
          failures.filter((error) => /too many connections/.test(error.message)).length >= 3
            ? true
            : undefined,
        { message: 'refused reconnects' },
      );
      // Meanwhile the projector moved on, its notifications lost to nobody listening.
      await admin.query(
        `insert into ${READ_MODEL_SCHEMA}.projection_checkpoints (topic, partition, next_offset, updated_at)
         values ('account', 0, 7, now())`,
      );
      await admin.query(`alter role ${role} connection limit -1`);

      await eventually(listenerBackend, { message: 'the listener never came back' });
      // What was missed is announced from the checkpoints, and notifications arrive again.
      await eventually(
        async () =>
          heard.some((batch) => batch.some((entry) => entry.next_offset === '7')) ? true : undefined,
        { message: 'missed progress never announced' },
      );
      await notifyProgress([{ topic: 'account', partition: 0, next_offset: '8' }]);
      await eventually(
        async () =>
          heard.some((batch) => batch.some((entry) => entry.next_offset === '8')) ? true : undefined,
        { message: 'notifications never resumed' },
      );
      expect(await progress.waitFor('account', 0, 8n, 1000)).toBe(true);
    } finally {
      unsubscribe();
      await admin.query(`alter role ${role} connection limit -1`);
      await progress.close();
      await pool.end();
    }
  });
});
