import { findConversationRow, findLeadRow } from '@leadline/decision-state';
import { aiPaused } from '@leadline/domain';
import type { EventData } from '@leadline/events';
import type { Database, DocumentLinks } from '@leadline/runtime';
import type { Kysely } from 'kysely';
import type { z } from 'zod';
import type { conversationListResponse, messageListResponse } from './schemas';

export async function listConversations(
  db: Kysely<Database>,
  accountId: string,
  query: { limit: number; offset: number; needs_handoff?: boolean | undefined },
  now: Date,
): Promise<Omit<z.infer<typeof conversationListResponse>, 'limit' | 'offset'>> {
  let filtered = db
    .selectFrom('conversations as c')
    .where('c.account_id', '=', accountId)
    .where('c.message_count', '>', 0);
  if (query.needs_handoff !== undefined)
    filtered = filtered.where('c.needs_handoff', '=', query.needs_handoff);
  const [rows, count] = await Promise.all([
    filtered
      .leftJoin('leads as l', (join) =>
        join.onRef('l.account_id', '=', 'c.account_id').onRef('l.phone', '=', 'c.phone'),
      )
      .selectAll('c')
      .select(['l.name', 'l.status as lead_status'])
      .select((eb) =>
        eb
          .exists(
            eb
              .selectFrom('sequence_enrollments as e')
              .select('e.id')
              .whereRef('e.account_id', '=', 'c.account_id')
              .whereRef('e.phone', '=', 'c.phone')
              .where('e.status', '=', 'active'),
          )
          .as('in_sequence'),
      )
      .orderBy('c.last_message_at', 'desc')
      .orderBy('c.phone')
      .limit(query.limit)
      .offset(query.offset)
      .execute(),
    filtered.select((eb) => eb.fn.countAll<string>().as('total')).executeTakeFirstOrThrow(),
  ]);
  return {
    conversations: rows.map((row) => {
      const paused = aiPaused(row, now);
      return {
        phone: row.phone,
        name: row.name,
        preview: row.preview ?? '',
        last_message_at: row.last_message_at!.toISOString(),
        message_count: row.message_count,
        needs_handoff: row.needs_handoff,
        lead_status: row.lead_status,
        in_sequence: Boolean(row.in_sequence),
        opted_out: row.opted_out,
        ai_paused: paused,
        ai_paused_until: paused ? row.ai_paused_until!.toISOString() : null,
      };
    }),
    total: Number(count.total),
  };
}

export async function listMessages(
  db: Kysely<Database>,
  accountId: string,
  phone: string,
  query: { limit: number; offset: number },
  links: DocumentLinks,
): Promise<Omit<z.infer<typeof messageListResponse>, 'limit' | 'offset'>> {
  const filtered = db.selectFrom('messages').where('account_id', '=', accountId).where('phone', '=', phone);
  const [rows, count] = await Promise.all([
    filtered
      .selectAll()
      .orderBy('sent_at', 'desc')
      .orderBy('id', 'desc')
      .limit(query.limit)
      .offset(query.offset)
      .execute(),
    filtered.select((eb) => eb.fn.countAll<string>().as('total')).executeTakeFirstOrThrow(),
  ]);
  // The provider's media URLs name our provider account; partners get our signed links instead, once
  // the AI agent has stored the file.
  const withMedia = rows.filter((row) => row.direction === 'inbound' && row.media.length > 0);
  const stored =
    withMedia.length === 0
      ? []
      : await db
          .selectFrom('documents')
          .select(['id', 'message_id', 'media_index'])
          .where('account_id', '=', accountId)
          .where(
            'message_id',
            'in',
            withMedia.map((row) => row.id),
          )
          .execute();
  const documentOf = new Map(
    stored.map((document) => [`${document.message_id}/${document.media_index}`, document.id]),
  );
  return {
    messages: rows.map((row) => ({
      id: row.id,
      direction: row.direction,
      body: row.body,
      content_expired: row.content_expired,
      sent_at: row.sent_at.toISOString(),
      status: row.status,
      held: row.held_reason
        ? {
            reason: row.held_reason as EventData<'message.held'>['reason'],
            until: row.held_until?.toISOString() ?? null,
          }
        : null,
      ...(row.direction === 'outbound'
        ? { source: row.source ?? undefined, sender_name: row.sender_name }
        : {
            media: row.media.map((item, index) => {
              const documentId = documentOf.get(`${row.id}/${index}`);
              return { url: documentId ? links.url(documentId) : null, content_type: item.content_type };
            }),
          }),
    })),
    total: Number(count.total),
  };
}

/** A conversation's messages can be read when the lead exists or when messages were exchanged. */
export async function conversationExists(db: Kysely<Database>, accountId: string, phone: string) {
  const [conversation, lead] = await Promise.all([
    findConversationRow(db, accountId, phone),
    findLeadRow(db, accountId, phone),
  ]);
  return conversation !== undefined || lead !== undefined;
}
