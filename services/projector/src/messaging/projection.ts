import { conversationChange } from '@leadline/domain';
import type { DomainEvent, EventOf } from '@leadline/events';
import { isErased, type Database } from '@leadline/runtime';
import { sql, type Insertable, type RawBuilder, type Transaction } from 'kysely';
import { defineProjection } from '../projection';
import { runsByType } from '../runs';
import { addUsage } from '../usage/counters';
import { addToTotals, countById } from '../usage/totals';

const handled = [
  'message.received',
  'message.outbound_requested',
  'message.held',
  'message.sent',
  'message.failed',
  'message.status_updated',
  'conversation.started',
  'conversation.ai_paused',
  'conversation.ai_resumed',
  'conversation.handoff_requested',
  'conversation.handoff_cleared',
  'lead.opted_out',
  'lead.opted_in',
] as const;
type MessagingEvent = EventOf<(typeof handled)[number]>;
type Trx = Transaction<Database>;

/** `(a, b, c), (d, e, f)` for a VALUES list. */
const valuesList = (rows: readonly unknown[][]) => sql.join(rows.map((row) => sql`(${sql.join(row)})`));

/** A delivery status only moves forward (callbacks arrive out of order); see deliveryStatusRank. */
const rank = (status: RawBuilder<unknown>) =>
  sql`(case ${status} when 'queued' then 0 when 'sent' then 1 else 2 end)`;
const rankOf = (status: string) => (status === 'queued' ? 0 : status === 'sent' ? 1 : 2);

/**
 * The first event of each message the statement changed (`changed`, the ids it returned): what a usage
 * counter counts, once a message, even when the message is twice in the run.
 */
function firstOfEachChanged<E extends { data: { message_id: string } }>(
  events: readonly E[],
  changed: ReadonlySet<string>,
): E[] {
  const seen = new Set<string>();
  return events.filter(({ data: { message_id: id } }) => {
    if (!changed.has(id) || seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

/**
 * Inserts a run's messages and counts the ones actually inserted on their conversations (created on
 * first sight: count, preview and last_message_at, whatever order the rows come in), in one statement.
 * Answers the ids inserted: a message seen twice (by id or by provider id) is stored and counted once.
 */
async function insertMessages(
  trx: Trx,
  rows: readonly Insertable<Database['messages']>[],
): Promise<Set<string>> {
  const inserted = await trx
    .with('inserted', (db) =>
      db
        .insertInto('messages')
        .values(rows)
        .onConflict((oc) => oc.doNothing())
        .returning(['id', 'account_id', 'phone', 'body', 'sent_at']),
    )
    .with('touched', (db) =>
      db
        .insertInto('conversations')
        .columns(['account_id', 'phone', 'preview', 'last_message_at', 'message_count'])
        .expression((eb) =>
          eb
            .selectFrom('inserted')
            // The newest message of each conversation names its preview (the later id on the same instant).
            .distinctOn(['account_id', 'phone'])
            .select((row) => [
              'account_id',
              'phone',
              sql<string>`left(body, 160)`.as('preview'),
              'sent_at',
              row.fn
                .countAll<number>()
                .over((over) => over.partitionBy(['account_id', 'phone']))
                .as('count'),
            ])
            .orderBy('account_id')
            .orderBy('phone')
            .orderBy('sent_at', 'desc')
            .orderBy('id', 'desc'),
        )
        .onConflict((oc) =>
          oc.columns(['account_id', 'phone']).doUpdateSet({
            message_count: sql`conversations.message_count + excluded.message_count`,
            // Every SET expression sees the row as it was, so this compares with the old last_message_at.
            preview: sql`case when conversations.last_message_at is null
              or excluded.last_message_at >= conversations.last_message_at
              then excluded.preview else conversations.preview end`,
            last_message_at: sql`greatest(conversations.last_message_at, excluded.last_message_at)`,
          }),
        ),
    )
    .selectFrom('inserted')
    .select('id')
    .execute();
  return new Set(inserted.map((row) => row.id));
}

/**
 * A message whose day the account's retention expired (its key destroyed, so the body reads as
 * erased): projected as the retention pass leaves a live one (see retention.ts), so a rebuild after
 * the pass ends where the live read model is.
 */
function content(data: { body: string; media?: { url: string; content_type: string | null }[] }) {
  const expired = isErased(data.body) || (data.media ?? []).some((medium) => isErased(medium.url));
  return expired
    ? { body: '', media: [], content_expired: true }
    : { body: data.body, media: data.media ?? [], content_expired: false };
}

async function received(trx: Trx, events: readonly EventOf<'message.received'>[]) {
  const fresh = await insertMessages(
    trx,
    events.map(({ account_id, occurred_at, data }) => {
      const { body, media, content_expired } = content(data);
      return {
        id: data.message_id,
        account_id,
        phone: data.phone,
        direction: 'inbound' as const,
        body,
        source: null,
        sender_name: null,
        status: 'received' as const,
        provider_message_id: data.provider_message_id,
        error_code: null,
        media: JSON.stringify(media),
        sent_at: occurred_at,
        content_expired,
      };
    }),
  );
  await addUsage(trx, 'messages_received', firstOfEachChanged(events, fresh));
}

async function outboundRequested(trx: Trx, events: readonly EventOf<'message.outbound_requested'>[]) {
  await insertMessages(
    trx,
    events.map(({ account_id, occurred_at, data }) => {
      const { body, content_expired } = content(data);
      return {
        id: data.message_id,
        account_id,
        phone: data.phone,
        direction: 'outbound' as const,
        body,
        source: data.source,
        sender_name: data.sender_name,
        status: 'queued' as const,
        provider_message_id: null,
        error_code: null,
        sent_at: occurred_at,
        content_expired,
      };
    }),
  );
}

/** `message.sent` once per message counts it in messages_sent; the status only moves forward. */
async function sent(trx: Trx, events: readonly EventOf<'message.sent'>[]) {
  const rows = events.map(({ data }) => [data.message_id, data.provider_message_id, data.status]);
  const updated = await sql<{ id: string }>`
    update messages as m set
      sent = true,
      held_reason = null,
      held_until = null,
      provider_message_id = coalesce(m.provider_message_id, v.provider_message_id),
      status = case when ${rank(sql`v.status`)} > ${rank(sql`m.status`)} then v.status else m.status end
    from (values ${valuesList(rows)}) as v(id, provider_message_id, status)
    where m.id = v.id and not m.sent
    returning m.id`.execute(trx);
  const fresh = new Set(updated.rows.map((row) => row.id));
  await addUsage(trx, 'messages_sent', firstOfEachChanged(events, fresh));
}

/**
 * The latest hold of each message wins (one row per message: an UPDATE ... FROM applies only one match).
 * Only a message still waiting takes it: a hold replayed after the message was sent or failed would
 * otherwise show a reason for a message that no longer waits.
 */
async function held(trx: Trx, events: readonly EventOf<'message.held'>[]) {
  const latest = new Map(events.map(({ data }) => [data.message_id, data]));
  const rows = [...latest.values()].map((data) => [data.message_id, data.reason, data.next_attempt_at]);
  await sql`
    update messages as m set held_reason = v.reason, held_until = v.until::timestamptz
    from (values ${valuesList(rows)}) as v(id, reason, until)
    where m.id = v.id and m.status = 'queued' and not m.sent`.execute(trx);
}

async function statusUpdated(trx: Trx, events: readonly EventOf<'message.status_updated'>[]) {
  // One row per message (an UPDATE ... FROM applies only one match): the furthest status wins.
  const furthest = new Map<string, EventOf<'message.status_updated'>['data']>();
  for (const { data } of events) {
    const previous = furthest.get(data.message_id);
    if (!previous || rankOf(data.status) >= rankOf(previous.status)) furthest.set(data.message_id, data);
  }
  const rows = [...furthest.values()].map((data) => [
    data.message_id,
    data.provider_message_id,
    data.status,
    data.error_code,
  ]);
  await sql`
    update messages as m set
      provider_message_id = coalesce(m.provider_message_id, v.provider_message_id),
      status = v.status,
      error_code = coalesce(v.error_code, m.error_code)
    from (values ${valuesList(rows)}) as v(id, provider_message_id, status, error_code)
    where m.id = v.id and ${rank(sql`v.status`)} > ${rank(sql`m.status`)}`.execute(trx);
}

async function started(trx: Trx, events: readonly EventOf<'conversation.started'>[]) {
  const first = new Map(events.map((event) => [`${event.account_id}\u0000${event.data.phone}`, event]));
  const startedRows = await trx
    .insertInto('conversations')
    .values(
      [...first.values()].map((event) => ({
        account_id: event.account_id,
        phone: event.data.phone,
        started_at: event.occurred_at,
        preview: null,
        last_message_at: null,
        ai_paused_until: null,
        opted_out_at: null,
      })),
    )
    .onConflict((oc) =>
      oc
        .columns(['account_id', 'phone'])
        .doUpdateSet({ started_at: sql`excluded.started_at` })
        .where('conversations.started_at', 'is', null),
    )
    .returning(['account_id', 'phone'])
    .execute();
  const fresh = startedRows.map((row) => first.get(`${row.account_id}\u0000${row.phone}`)!);
  await addToTotals(
    trx,
    { table: 'accounts', column: 'total_conversations' },
    countById(fresh.map((event) => event.account_id)),
  );
  await addUsage(trx, 'conversations', fresh);
}

/**
 * What a flag event changes on its conversation: the domain's `conversationChange`, the same rule a
 * decision evolves its state by, as columns. Flags are rare, one row each: an upsert, so their order
 * against messages is free.
 */
async function setFlags(trx: Trx, event: MessagingEvent) {
  const change = conversationChange(event) ?? {};
  const flags = {
    ...(change.needs_handoff !== undefined && { needs_handoff: change.needs_handoff }),
    ...(change.ai_paused_until !== undefined && {
      ai_paused_until: change.ai_paused_until?.toISOString() ?? null,
    }),
    ...(change.opted_out !== undefined && {
      opted_out: change.opted_out,
      opted_out_at: change.opted_out ? event.occurred_at : null,
    }),
  };
  await trx
    .insertInto('conversations')
    .values({
      account_id: event.account_id,
      phone: event.data.phone,
      started_at: null,
      preview: null,
      last_message_at: null,
      ai_paused_until: null,
      opted_out_at: null,
      ...flags,
    })
    .onConflict((oc) => oc.columns(['account_id', 'phone']).doUpdateSet(flags))
    .execute();
}

/**
 * A run of failures as one statement (a sequencer batch can fail many sends at once). A message failed
 * twice keeps its first failure, as applying them one by one would: the second finds it failed already.
 */
async function failed(trx: Trx, events: readonly EventOf<'message.failed'>[]) {
  const firstOf = new Map<string, string>();
  for (const { data } of events)
    if (!firstOf.has(data.message_id)) firstOf.set(data.message_id, data.error_code ?? data.reason);
  await sql`
    update messages set status = 'failed', error_code = f.error_code, held_reason = null, held_until = null
    from unnest(${[...firstOf.keys()]}::text[], ${[...firstOf.values()]}::text[]) as f (id, error_code)
    where messages.id = f.id and messages.status in ('queued', 'sent')`.execute(trx);
}

async function applyRun(trx: Trx, run: MessagingEvent[]) {
  const first = run[0]!;
  switch (first.type) {
    case 'message.received':
      return received(trx, run as EventOf<'message.received'>[]);
    case 'message.outbound_requested':
      return outboundRequested(trx, run as EventOf<'message.outbound_requested'>[]);
    case 'message.held':
      return held(trx, run as EventOf<'message.held'>[]);
    case 'message.sent':
      return sent(trx, run as EventOf<'message.sent'>[]);
    case 'message.status_updated':
      return statusUpdated(trx, run as EventOf<'message.status_updated'>[]);
    case 'message.failed':
      return failed(trx, run as EventOf<'message.failed'>[]);
    case 'conversation.started':
      return started(trx, run as EventOf<'conversation.started'>[]);
    case 'conversation.ai_paused':
    case 'conversation.ai_resumed':
    case 'conversation.handoff_requested':
    case 'conversation.handoff_cleared':
    case 'lead.opted_out':
    case 'lead.opted_in':
      for (const event of run) await setFlags(trx, event);
      return;
    default: {
      const unhandled: never = first;
      throw new Error(`Unhandled event ${(unhandled as DomainEvent).type}`);
    }
  }
}

/**
 * Conversations (conversationList) and messages (conversationMessages), with the accounts'
 * conversation totals and the conversations / messages_sent / messages_received counters.
 */
export const messagingProjection = defineProjection('messaging', handled, async (trx, events) => {
  for (const run of runsByType(events)) await applyRun(trx, run);
});
