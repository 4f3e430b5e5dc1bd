import { eventDefinitionsByType, type DomainEvent, type EventType } from '@leadline/events';
import type { Projection } from '@leadline/projector';
import type { Database } from '@leadline/runtime';
import { Kafka, logLevel } from 'kafkajs';
import { sql, type Kysely } from 'kysely';

/**
 * A Kafka client for a broker that refuses every connection, without retrying: each append of a
 * command bus built on it fails at once, as when the broker is gone.
 */
export function refusingKafka(): Kafka {
  return new Kafka({
    clientId: 'refused',
    brokers: ['127.0.0.1:1'],
    retry: { retries: 0 },
    logLevel: logLevel.NOTHING,
  });
}

/** Every row of every read model, in a stable order: what a rebuild must reproduce. */
export async function readModelSnapshot(db: Kysely<Database>): Promise<Record<string, unknown[]>> {
  const { rows: tables } = await sql<{ table_name: string }>`
    select table_name from information_schema.tables
    where table_schema = 'read_model'
      and table_name not in ('projection_checkpoints', 'projection_parked_records', 'kysely_migration', 'kysely_migration_lock')
    order by table_name`.execute(db);
  const snapshot: Record<string, unknown[]> = {};
  for (const { table_name } of tables) {
    const { rows } = await sql`select * from ${sql.table(`read_model.${table_name}`)}`.execute(db);
    snapshot[table_name] = rows.map((row) => JSON.stringify(row)).sort();
  }
  return snapshot;
}

/** Creates the table `appliedEvents` writes to. */
export async function recordAppliedEvents(db: Kysely<Database>): Promise<void> {
  await sql`create table public.test_applied_events (applied bigserial, event_id text not null)`.execute(db);
}

/**
 * Every event the live projector applies, as it applies it: one row per application, numbered in the
 * order of application. A partition's batches are applied one after another under its checkpoint's
 * lock, so the numbers of one account's events follow the order they were applied in, whichever
 * instance applied them.
 */
export const appliedEvents: Projection = {
  name: 'applied events (test)',
  handles: new Set(eventDefinitionsByType.keys() as Iterable<EventType>),
  async apply(trx, events) {
    await sql`insert into public.test_applied_events (event_id)
      select id from unnest(${events.map((event) => event.id)}::text[]) with ordinality as applied (id, n)
      order by n`.execute(trx);
  },
};

/** Ids of the events `appliedEvents` saw applied, in the order they were applied. */
export async function eventsInApplicationOrder(db: Kysely<Database>): Promise<string[]> {
  const { rows } = await sql<{ event_id: string }>`
    select event_id from public.test_applied_events order by applied`.execute(db);
  return rows.map((row) => row.event_id);
}

/** Ids of the events `appliedEvents` saw applied more than once. */
export async function eventsAppliedTwice(db: Kysely<Database>): Promise<string[]> {
  const { rows } = await sql<{ event_id: string }>`
    select event_id from public.test_applied_events group by event_id having count(*) > 1`.execute(db);
  return rows.map((row) => row.event_id);
}

/**
 * How the live projector applied the account topic's `events` (as `appliedEvents` recorded them):
 * the ids it applied more than once, how many of the events it applied, and the accounts whose events
 * it applied in another order than the log's. Nothing twice, all of them, none out of order: no event
 * was skipped or repeated whichever instance or leader served a partition when.
 */
export async function applicationOf(
  db: Kysely<Database>,
  events: readonly DomainEvent[],
): Promise<{ appliedTwice: string[]; applied: number; outOfOrder: string[] }> {
  const appliedTwice = await eventsAppliedTwice(db);
  const onLog = new Map(events.map((event) => [event.id, event]));
  const applied = (await eventsInApplicationOrder(db)).filter((id) => onLog.has(id));
  const byAccount = (ids: readonly string[]) => {
    const grouped = new Map<string, string[]>();
    for (const id of ids) {
      const account = onLog.get(id)!.account_id ?? '';
      grouped.set(account, [...(grouped.get(account) ?? []), id]);
    }
    return grouped;
  };
  const logOrder = byAccount(events.map((event) => event.id));
  const appliedOrder = byAccount(applied);
  const outOfOrder = [...logOrder].flatMap(([account, ids]) =>
    (appliedOrder.get(account) ?? []).join() === ids.join() ? [] : [account],
  );
  return { appliedTwice, applied: applied.length, outOfOrder };
}
