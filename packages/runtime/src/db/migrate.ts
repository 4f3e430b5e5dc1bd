import { Kysely, PostgresDialect, sql } from 'kysely';
import { Migrator, type Migration } from 'kysely/migration';
import pg from 'pg';
import { createPool, READ_MODEL_SCHEMA } from './database';
import { logGenerationMigrations } from './migrations/log-generations';
import { operationalMigrations } from './migrations/operational';

export { reserveExistingPhoneNumbers, reserveExistingSlugs } from './migrations/operational';
import { readModelMigrations } from './migrations/read-model';

const provider = (migrations: Record<string, Migration>) => ({ getMigrations: async () => migrations });

/** Creates the database named in the URL if it does not exist (connecting to `postgres` to do so). */
export async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (rowCount === 0) await client.query(`create database "${name.replaceAll('"', '""')}"`);
  } catch (error) {
    // Two processes may race to create it; the loser sees a duplicate.
    if ((error as { code?: string }).code !== '42P04') throw error;
  } finally {
    await client.end();
  }
}

async function migrateSchema(url: string, schema: string, migrations: Record<string, Migration>) {
  const db = new Kysely<unknown>({
    dialect: new PostgresDialect({
      pool: createPool(url, {
        readModelSchema: schema,
        maxConnections: 1,
        // A migration may rewrite a big table, and a process starting beside one that migrates waits on
        // the migration lock for as long as that takes: neither is a stuck peer.
        timeouts: { statementMs: 0, lockMs: 0 },
      }),
    }),
  });
  try {
    await sql`create schema if not exists ${sql.id(schema)}`.execute(db);
    const migrator = new Migrator({
      db,
      provider: provider(migrations),
      migrationTableSchema: schema,
      // Features add migrations side by side; a database that ran a later-named one first still
      // takes an earlier-named newcomer (each migration stands alone).
      allowUnorderedMigrations: true,
    });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error;
  } finally {
    await db.destroy();
  }
}

/** Brings the operational tables and the read models of `readModelSchema` to the latest version. */
export async function migrate(url: string, readModelSchema = READ_MODEL_SCHEMA): Promise<void> {
  await ensureDatabase(url);
  await migrateSchema(url, 'public', { ...operationalMigrations, ...logGenerationMigrations });
  await migrateSchema(url, readModelSchema, readModelMigrations);
}
