import type { DomainEvent, EventCodec, TopicNames, WebhookEnvelope } from '@leadline/events';
import {
  type DocumentLinks,
  advanceCheckpoint,
  freshRecords,
  isPhoneOfSubject,
  startLogConsumer,
  type Clock,
  type Database,
  type NewId,
  type PersonalDataKeys,
  type PositionedEvent,
  type RunningConsumer,
} from '@leadline/runtime';
import { sql, type Insertable, type Kysely, type Transaction } from 'kysely';
import type { Kafka } from 'kafkajs';
import { forgetErasedLead, forgetExpiredContent } from './erasure';
import { queueDeliveries } from './fan-out';
import { toWebhookEvent, type LeadNameFields } from './mapping';

export type { PositionedEvent };

export interface RelayDeps {
  kafka: Kafka;
  db: Kysely<Database>;
  codec: EventCodec;
  topics: TopicNames;
  groupId: string;
  clock: Clock;
  newId: NewId;
  /** Names an erased lead's phone (`lead.erased` carries the keyed hash, not the number). */
  personalDataKeys: Pick<PersonalDataKeys, 'subjectOf'>;
  /** Signs `file_url` of collected documents; without it, `file_url` is null. */
  documentLinks?: DocumentLinks;
  /** Called after a batch committed new deliveries, so the dispatcher sends them at once. */
  onDeliveriesQueued?: () => void;
  onCrash?: (error: Error, willRestart: boolean) => void;
}

export type RunningRelay = RunningConsumer;

const INSERT_CHUNK = 500;
const keyOf = (accountId: string, phone: string) => `${accountId}\u0000${phone}`;

/** The relay's own lead-name lookup, changed in log order as the batch goes. */
async function loadLeadNames(trx: Transaction<Database>, events: readonly DomainEvent[]) {
  const wanted = new Map<string, { account_id: string; phone: string }>();
  for (const event of events) {
    const phone = (event.data as { phone?: unknown }).phone;
    if (event.account_id && typeof phone === 'string') {
      wanted.set(keyOf(event.account_id, phone), { account_id: event.account_id, phone });
    }
  }
  const names = new Map<string, LeadNameFields | null>();
  if (wanted.size === 0) return names;
  const rows = await trx
    .selectFrom('webhook_lead_names')
    .selectAll()
    .where(
      sql<boolean>`(account_id, phone) in (select * from unnest(${[...wanted.values()].map((key) => key.account_id)}::text[], ${[...wanted.values()].map((key) => key.phone)}::text[]))`,
    )
    .execute();
  for (const row of rows) names.set(keyOf(row.account_id, row.phone), row);
  return names;
}

/**
 * Applies one partition's batch in one transaction with the relay's checkpoint for that partition:
 * keeps the lead names current, maps each event, and queues one delivery per matching webhook.
 * Records below the checkpoint were handled by an earlier delivery and are skipped; the unique
 * (webhook_id, event_id) makes a queued delivery idempotent as well. Returns the deliveries queued.
 */
export async function relayBatch(
  deps: Pick<RelayDeps, 'db' | 'clock' | 'newId' | 'documentLinks' | 'personalDataKeys'>,
  topic: string,
  partition: number,
  records: readonly PositionedEvent[],
): Promise<number> {
  const last = records.at(-1);
  if (!last) return 0;
  const { db, clock } = deps;
  return db.transaction().execute(async (trx) => {
    const fresh = await freshRecords(
      trx,
      'webhook_relay_checkpoints',
      topic,
      partition,
      records,
      clock.now(),
    );
    const events = fresh.flatMap((record) => (record.event ? [record.event] : []));

    let queued = 0;
    if (events.length > 0) {
      const names = await loadLeadNames(trx, events);
      let changedNames = new Set<string>();
      const leads = {
        get: (accountId: string, phone: string) => names.get(keyOf(accountId, phone)) ?? undefined,
      };
      let mapped: { event: DomainEvent; webhookEvent: WebhookEnvelope }[] = [];
      const flush = async () => {
        await saveLeadNames(trx, names, changedNames);
        queued += await queueDeliveries(trx, mapped, clock.now());
        changedNames = new Set();
        mapped = [];
      };
      for (const event of events) {
        if (event.type === 'lead.erased') {
          // In log order: what came before the erasure is queued and then forgotten with the rest of
          // the lead's deliveries; the erasure's own webhook, and what follows, are queued after it.
          await flush();
          await forgetErasedLead(trx, deps.personalDataKeys, event, clock.now());
          for (const key of names.keys()) {
            const [accountId, phone] = key.split('\u0000') as [string, string];
            if (
              accountId === event.account_id &&
              isPhoneOfSubject(deps.personalDataKeys, accountId, event.data.subject, phone)
            )
              names.delete(key);
          }
        }
        if (event.type === 'account.content_expired') {
          // In log order, as an erasure: what came before is queued, then forgotten if expired.
          await flush();
          await forgetExpiredContent(trx, event, clock.now());
        }
        const webhookEvent = toWebhookEvent(event, leads, deps.documentLinks);
        if (webhookEvent) mapped.push({ event, webhookEvent });
        if (event.type === 'lead.created') {
          const { name, first_name, last_name, phone } = event.data;
          names.set(keyOf(event.account_id, phone), { name, first_name, last_name });
          changedNames.add(keyOf(event.account_id, phone));
        } else if (event.type === 'lead.updated') {
          const key = keyOf(event.account_id, event.data.phone);
          const { name, first_name, last_name } = event.data.changes;
          if (name !== undefined || first_name !== undefined || last_name !== undefined) {
            const known = names.get(key) ?? { name: null, first_name: null, last_name: null };
            names.set(key, {
              name: name !== undefined ? name : known.name,
              first_name: first_name !== undefined ? first_name : known.first_name,
              last_name: last_name !== undefined ? last_name : known.last_name,
            });
            changedNames.add(key);
          }
        } else if (event.type === 'lead.deleted') {
          names.set(keyOf(event.account_id, event.data.phone), null);
          changedNames.add(keyOf(event.account_id, event.data.phone));
        }
      }
      await flush();
    }

    await advanceCheckpoint(trx, 'webhook_relay_checkpoints', topic, partition, last.offset, clock.now());
    return queued;
  });
}

async function saveLeadNames(
  trx: Transaction<Database>,
  names: Map<string, LeadNameFields | null>,
  changed: Set<string>,
) {
  const upserts: Insertable<Database['webhook_lead_names']>[] = [];
  const deletes: { account_id: string; phone: string }[] = [];
  for (const key of changed) {
    const [account_id, phone] = key.split('\u0000') as [string, string];
    const fields = names.get(key);
    if (fields) upserts.push({ account_id, phone, ...fields });
    else deletes.push({ account_id, phone });
  }
  for (let start = 0; start < upserts.length; start += INSERT_CHUNK) {
    await trx
      .insertInto('webhook_lead_names')
      .values(upserts.slice(start, start + INSERT_CHUNK))
      .onConflict((oc) =>
        oc.columns(['account_id', 'phone']).doUpdateSet((eb) => ({
          name: eb.ref('excluded.name'),
          first_name: eb.ref('excluded.first_name'),
          last_name: eb.ref('excluded.last_name'),
        })),
      )
      .execute();
  }
  if (deletes.length > 0) {
    await sql`
      delete from webhook_lead_names
      where (account_id, phone) in (
        select * from unnest(${deletes.map((key) => key.account_id)}::text[], ${deletes.map((key) => key.phone)}::text[])
      )`.execute(trx);
  }
}

/**
 * Consumes the account topic with the relay's own consumer group and checkpoints (webhook events are
 * about sub-accounts; partner-level events never become deliveries).
 */
export function startRelay(deps: RelayDeps): Promise<RunningRelay> {
  return startLogConsumer({
    ...deps,
    topics: [deps.topics.account],
    checkpoints: 'webhook_relay_checkpoints',
    handleBatch: async (topic, partition, records) => {
      const queued = await relayBatch(deps, topic, partition, records);
      if (queued > 0) deps.onDeliveriesQueued?.();
    },
  });
}
