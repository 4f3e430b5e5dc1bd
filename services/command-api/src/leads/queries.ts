import { findConversationRow } from '@leadline/decision-state';
import { checklistProgress } from '@leadline/domain';
import type { Database, DocumentLinks } from '@leadline/runtime';
import type { Kysely, Selectable } from 'kysely';
import type { z } from 'zod';
import { escapeLike } from '../accounts/queries';
import { leadSequence } from '../sequences/queries';
import type { checklistResponse, leadDetailsResponse } from './schemas';

type LeadRow = Selectable<Database['leads']>;

async function requirementsOf(db: Kysely<Database>, accountId: string) {
  return db
    .selectFrom('requirements')
    .select(['id', 'name', 'type', 'required', 'description'])
    .where('account_id', '=', accountId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** The checklist of one lead: every current requirement with what was collected for it. */
export async function leadChecklist(
  db: Kysely<Database>,
  accountId: string,
  leadId: string,
  links: DocumentLinks,
): Promise<z.infer<typeof checklistResponse>> {
  const [requirements, collected] = await Promise.all([
    requirementsOf(db, accountId),
    db.selectFrom('lead_checklist_items').selectAll().where('lead_id', '=', leadId).execute(),
  ]);
  const byRequirement = new Map(collected.map((item) => [item.requirement_id, item]));
  const { completed_count, total_count, progress } = checklistProgress(
    requirements,
    new Set(byRequirement.keys()),
  );
  return {
    checklist: requirements.map((requirement) => {
      const item = byRequirement.get(requirement.id);
      return {
        requirement_id: requirement.id,
        name: requirement.name,
        type: requirement.type,
        required: requirement.required,
        status: item ? ('completed' as const) : ('pending' as const),
        ...(item?.document_id && { file_url: links.url(item.document_id) }),
        ...(item && { collected_at: item.collected_at.toISOString() }),
        ...(item?.value && { value: item.value }),
      };
    }),
    completed_count,
    total_count,
    progress,
  };
}

export async function leadDetails(
  db: Kysely<Database>,
  row: LeadRow,
  links: DocumentLinks,
): Promise<z.infer<typeof leadDetailsResponse>> {
  const [{ checklist, progress }, conversation, sequence] = await Promise.all([
    leadChecklist(db, row.account_id, row.id, links),
    findConversationRow(db, row.account_id, row.phone),
    leadSequence(db, row.id),
  ]);
  const lastMessageAt = conversation?.last_message_at?.toISOString() ?? null;
  return {
    phone: row.phone,
    name: row.name,
    first_name: row.first_name,
    last_name: row.last_name,
    email: row.email,
    company: row.company,
    notes: row.notes,
    status: row.status,
    source: row.source,
    external_id: row.external_id,
    property_address: row.property_address,
    auto_sequence: row.auto_sequence,
    metadata: row.metadata,
    opted_out: conversation?.opted_out ?? false,
    last_message_at: lastMessageAt,
    created_at: row.created_at.toISOString(),
    checklist: {
      progress,
      items: checklist.map(({ name, type, status, collected_at, value, file_url }) => ({
        name,
        type,
        status,
        ...(collected_at && { collected_at }),
        ...(value && { value }),
        ...(file_url && { file_url }),
      })),
    },
    conversation: {
      message_count: conversation?.message_count ?? 0,
      last_message_at: lastMessageAt,
      summary: conversation?.summary ?? '',
      needs_handoff: conversation?.needs_handoff ?? false,
    },
    sequence,
  };
}

export async function listLeads(
  db: Kysely<Database>,
  accountId: string,
  query: {
    limit: number;
    offset: number;
    status?: LeadRow['status'] | undefined;
    source?: string | undefined;
    search?: string | undefined;
  },
) {
  let filtered = db.selectFrom('leads').where('account_id', '=', accountId);
  if (query.status) filtered = filtered.where('status', '=', query.status);
  if (query.source) filtered = filtered.where('source', '=', query.source);
  if (query.search) {
    const pattern = `%${escapeLike(query.search)}%`;
    filtered = filtered.where((eb) =>
      eb.or([eb('name', 'ilike', pattern), eb('email', 'ilike', pattern), eb('phone', 'like', pattern)]),
    );
  }
  const [rows, count, requirements] = await Promise.all([
    filtered
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(query.limit)
      .offset(query.offset)
      .execute(),
    filtered.select((eb) => eb.fn.countAll<string>().as('total')).executeTakeFirstOrThrow(),
    requirementsOf(db, accountId),
  ]);
  const [collected, conversations] =
    rows.length === 0
      ? [[], []]
      : await Promise.all([
          db
            .selectFrom('lead_checklist_items')
            .select(['lead_id', 'requirement_id'])
            .where(
              'lead_id',
              'in',
              rows.map((row) => row.id),
            )
            .execute(),
          db
            .selectFrom('conversations')
            .select(['phone', 'last_message_at'])
            .where('account_id', '=', accountId)
            .where(
              'phone',
              'in',
              rows.map((row) => row.phone),
            )
            .execute(),
        ]);
  const lastMessageAt = new Map(conversations.map((row) => [row.phone, row.last_message_at]));
  const leads = rows.map((row) => {
    const mine = new Set(
      collected.filter((item) => item.lead_id === row.id).map((item) => item.requirement_id),
    );
    return {
      phone: row.phone,
      name: row.name,
      email: row.email,
      status: row.status,
      source: row.source,
      checklist_progress: checklistProgress(requirements, mine).progress,
      last_message_at: lastMessageAt.get(row.phone)?.toISOString() ?? null,
      created_at: row.created_at.toISOString(),
    };
  });
  return { leads, total: Number(count.total) };
}
