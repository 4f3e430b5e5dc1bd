import { leadFieldNames, type ConversationState, type Lead } from '@leadline/domain';
import { hasPendingOptOut, pendingOptOutPhones, type Database } from '@leadline/runtime';
import type { Kysely, Selectable } from 'kysely';

type LeadRow = Selectable<Database['leads']>;
type AccountRow = Selectable<Database['accounts']>;

export function findLeadRow(db: Kysely<Database>, accountId: string, phone: string) {
  return db
    .selectFrom('leads')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('phone', '=', phone)
    .executeTakeFirst();
}

/** The conversation with a phone, which outlives its lead (and is absent before any message). */
export function findConversationRow(db: Kysely<Database>, accountId: string, phone: string) {
  return db
    .selectFrom('conversations')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('phone', '=', phone)
    .executeTakeFirst();
}

export function toLead(row: LeadRow): Lead {
  return {
    lead_id: row.id,
    phone: row.phone,
    status: row.status,
    auto_sequence: row.auto_sequence,
    metadata: row.metadata,
    created_at: row.created_at.toISOString(),
    ...(Object.fromEntries(leadFieldNames.map((field) => [field, row[field]])) as Pick<
      Lead,
      (typeof leadFieldNames)[number]
    >),
  };
}

/** The account's leads an import could match: by any of its phones or external ids. */
export async function leadsMatching(
  db: Kysely<Database>,
  accountId: string,
  phones: readonly string[],
  externalIds: readonly string[],
): Promise<Lead[]> {
  if (phones.length === 0 && externalIds.length === 0) return [];
  const rows = await db
    .selectFrom('leads')
    .selectAll()
    .where('account_id', '=', accountId)
    .where((eb) =>
      eb.or([
        ...(phones.length > 0 ? [eb('phone', 'in', [...phones])] : []),
        ...(externalIds.length > 0 ? [eb('external_id', 'in', [...externalIds])] : []),
      ]),
    )
    .execute();
  return rows.map(toLead);
}

type StateAccount = Pick<AccountRow, 'id' | 'status' | 'company_name' | 'ai_pause_minutes'>;

const toConversationState = (
  account: StateAccount,
  conversation: Selectable<Database['conversations']> | undefined,
  lead: Selectable<Database['leads']> | undefined,
  optOutPending: boolean,
): ConversationState => ({
  account,
  conversation: conversation && { ...conversation, started: conversation.started_at !== null },
  lead: lead && toLead(lead),
  optOutPending,
});

/**
 * What the conversation deciders read, inside the command's transaction. Always with the opt-out
 * answered to Twilio whose decision is still queued, so no send path can decide without it.
 */
export async function conversationState(
  db: Kysely<Database>,
  account: StateAccount,
  phone: string,
): Promise<ConversationState> {
  const [conversation, lead, optOutPending] = await Promise.all([
    findConversationRow(db, account.id, phone),
    findLeadRow(db, account.id, phone),
    hasPendingOptOut(db, account.id, phone),
  ]);
  return toConversationState(account, conversation, lead, optOutPending);
}

/**
 * `conversationState` for many numbers of one account, in three queries whatever their number (a command
 * deciding for several conversations at once).
 */
export async function conversationStates(
  db: Kysely<Database>,
  account: StateAccount,
  phones: readonly string[],
): Promise<Map<string, ConversationState>> {
  const wanted = [...new Set(phones)];
  const states = new Map<string, ConversationState>();
  if (wanted.length === 0) return states;
  const [conversations, leads, pendingOptOuts] = await Promise.all([
    db
      .selectFrom('conversations')
      .selectAll()
      .where('account_id', '=', account.id)
      .where('phone', 'in', wanted)
      .execute(),
    db
      .selectFrom('leads')
      .selectAll()
      .where('account_id', '=', account.id)
      .where('phone', 'in', wanted)
      .execute(),
    pendingOptOutPhones(db, account.id, wanted),
  ]);
  const conversationOf = new Map(conversations.map((row) => [row.phone, row]));
  const leadOf = new Map(leads.map((row) => [row.phone, row]));
  for (const phone of wanted)
    states.set(
      phone,
      toConversationState(account, conversationOf.get(phone), leadOf.get(phone), pendingOptOuts.has(phone)),
    );
  return states;
}
