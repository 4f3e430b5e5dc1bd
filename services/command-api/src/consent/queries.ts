import { findConversationRow } from '@leadline/decision-state';
import { leadName } from '@leadline/events';
import type { Database } from '@leadline/runtime';
import { sql, type Kysely } from 'kysely';
import type { z } from 'zod';
import type { consentRecordResponse } from './schemas';

export type ConsentRecord = z.infer<typeof consentRecordResponse>;

/** A record with what it links to: the lead having its phone now, and the message a texted one was. */
function records(db: Kysely<Database>, accountId: string) {
  return db
    .selectFrom('consent_records as r')
    .leftJoin('leads as l', (join) =>
      join.onRef('l.account_id', '=', 'r.account_id').onRef('l.phone', '=', 'r.phone'),
    )
    .leftJoin('messages as m', (join) =>
      join.onRef('m.id', '=', 'r.message_id').onRef('m.account_id', '=', 'r.account_id'),
    )
    .select([
      'r.id',
      'r.phone',
      'l.name',
      'l.first_name',
      'l.last_name',
      'r.action',
      'r.method',
      'r.captured_at',
      'r.recorded_at',
      'r.recorded_via',
      'r.recorded_by',
      'r.source_url',
      'r.ip_address',
      'r.disclosure_text',
      'r.evidence_url',
      'r.keyword',
      'r.message_id',
      'm.body as message_body',
      'm.sent_at as message_received_at',
    ])
    .where('r.account_id', '=', accountId);
}

type RecordRow = Awaited<ReturnType<ReturnType<typeof records>['execute']>>[number];

export function toConsentRecord(row: RecordRow): ConsentRecord {
  return {
    id: row.id,
    phone: row.phone,
    lead_name: leadName({ name: row.name, first_name: row.first_name, last_name: row.last_name }),
    action: row.action,
    method: row.method,
    captured_at: row.captured_at.toISOString(),
    recorded_at: row.recorded_at.toISOString(),
    recorded_via: row.recorded_via,
    recorded_by: row.recorded_by,
    source_url: row.source_url,
    ip_address: row.ip_address,
    disclosure_text: row.disclosure_text,
    evidence_url: row.evidence_url,
    keyword: row.keyword,
    message:
      row.message_id && row.message_body !== null && row.message_received_at
        ? { id: row.message_id, body: row.message_body, received_at: row.message_received_at.toISOString() }
        : null,
  };
}

/** One record of the account, by id (the grant a request just recorded or repeated). */
export async function findConsentRecord(db: Kysely<Database>, accountId: string, id: string) {
  const row = await records(db, accountId).where('r.id', '=', id).executeTakeFirst();
  return row && toConsentRecord(row);
}

/** The id of the number's grant equal to `grant`, if it has one (what a repeated grant answers). */
export async function findGrantId(
  db: Kysely<Database>,
  accountId: string,
  phone: string,
  grant: {
    method: string;
    captured_at: string;
    source_url: string | null;
    ip_address: string | null;
    disclosure_text: string | null;
    evidence_url: string | null;
  },
) {
  const row = await db
    .selectFrom('consent_records')
    .select('id')
    .where('account_id', '=', accountId)
    .where('phone', '=', phone)
    .where('action', '=', 'granted')
    .where('method', '=', grant.method as never)
    .where('captured_at', '=', new Date(grant.captured_at))
    .where(sql<boolean>`source_url is not distinct from ${grant.source_url}`)
    .where(sql<boolean>`ip_address is not distinct from ${grant.ip_address}`)
    .where(sql<boolean>`disclosure_text is not distinct from ${grant.disclosure_text}`)
    .where(sql<boolean>`evidence_url is not distinct from ${grant.evidence_url}`)
    .orderBy('recorded_at')
    .executeTakeFirst();
  return row?.id;
}

/** A number's trail, in the order it happened, with its status (the record captured last). */
export async function consentTrail(
  db: Kysely<Database>,
  accountId: string,
  phone: string,
  page: { limit: number; offset: number },
) {
  const mine = records(db, accountId).where('r.phone', '=', phone);
  const [rows, count, latest, conversation] = await Promise.all([
    mine
      .orderBy('r.captured_at')
      .orderBy('r.recorded_at')
      .orderBy('r.id')
      .limit(page.limit)
      .offset(page.offset)
      .execute(),
    db
      .selectFrom('consent_records')
      .select((eb) => eb.fn.countAll<string>().as('total'))
      .where('account_id', '=', accountId)
      .where('phone', '=', phone)
      .executeTakeFirstOrThrow(),
    db
      .selectFrom('consent_records')
      .select('action')
      .where('account_id', '=', accountId)
      .where('phone', '=', phone)
      .orderBy('captured_at', 'desc')
      .orderBy('recorded_at', 'desc')
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst(),
    findConversationRow(db, accountId, phone),
  ]);
  return {
    records: rows.map(toConsentRecord),
    total: Number(count.total),
    status: latest?.action ?? ('none' as const),
    opted_out: conversation?.opted_out ?? false,
  };
}

/**
 * The account's records recorded in [from, to), in a stable order (`recorded_at`, then id), a page at
 * a time by keyset: each page is one short query that starts after the last row of the one before, so
 * no connection or transaction stays open while the client reads, the export holds one page in memory
 * whatever its size, and rows recorded meanwhile (after `to`) do not shift it.
 */
export async function* consentRecordPages(
  db: Kysely<Database>,
  accountId: string,
  range: { from: Date | undefined; to: Date },
  pageSize: number,
): AsyncGenerator<ConsentRecord[]> {
  let after: { recorded_at: Date; id: string } | undefined;
  for (;;) {
    const cursor = after;
    const rows = await records(db, accountId)
      .$if(range.from !== undefined, (query) => query.where('r.recorded_at', '>=', range.from!))
      .where('r.recorded_at', '<', range.to)
      .$if(cursor !== undefined, (query) =>
        query.where(sql<boolean>`(r.recorded_at, r.id) > (${cursor!.recorded_at}, ${cursor!.id})`),
      )
      .orderBy('r.recorded_at')
      .orderBy('r.id')
      .limit(pageSize)
      .execute();
    if (rows.length === 0) return;
    yield rows.map(toConsentRecord);
    if (rows.length < pageSize) return;
    const last = rows.at(-1)!;
    after = { recorded_at: last.recorded_at, id: last.id };
  }
}
