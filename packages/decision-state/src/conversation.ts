import { leadFieldNames, newConversation, type ConversationState, type Lead } from '@leadline/domain';
import { optOutHolds, type Database, type OptOutHolds, type PersonalDataKeys } from '@leadline/runtime';
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

/** What finds an opt-out kept past its person's erasure: the number's keyed hash. */
export type SubjectKeys = Pick<PersonalDataKeys, 'subjectOf'>;

/**
 * The conversation as deciders read it. A number whose opt-out outlived its person's erasure is opted
 * out whether or not it has a row yet (the projector marks the rows it makes for it): without one, it
 * is the conversation `lead.opted_out` would leave, so an inbound START undoes it and every send path
 * refuses the number, before the projector has seen a re-imported lead as after.
 */
export function conversationView(
  row: Selectable<Database['conversations']> | undefined,
  suppressed: boolean,
): ConversationState['conversation'] {
  if (row) return { ...row, started: row.started_at !== null, opted_out: row.opted_out || suppressed };
  return suppressed ? { ...newConversation, opted_out: true } : undefined;
}

const toConversationState = (
  account: StateAccount,
  conversation: Selectable<Database['conversations']> | undefined,
  lead: Selectable<Database['leads']> | undefined,
  holds: OptOutHolds,
  phone: string,
): ConversationState => ({
  account,
  conversation: conversationView(conversation, holds.suppressed.has(phone)),
  lead: lead && toLead(lead),
  optOutPending: holds.pending.has(phone),
});

/**
 * What the conversation deciders read, inside the command's transaction. Always with the opt-out
 * answered to Twilio whose decision is still queued, so no send path can decide without it, and the
 * one kept past an erasure.
 */
export async function conversationState(
  db: Kysely<Database>,
  keys: SubjectKeys,
  account: StateAccount,
  phone: string,
): Promise<ConversationState> {
  const [conversation, lead, holds] = await Promise.all([
    findConversationRow(db, account.id, phone),
    findLeadRow(db, account.id, phone),
    optOutHolds(db, keys, account.id, [phone]),
  ]);
  return toConversationState(account, conversation, lead, holds, phone);
}

/** The conversation and lead rows of many numbers of one account (at least one): two queries whatever their number. */
export async function conversationRows(db: Kysely<Database>, accountId: string, phones: readonly string[]) {
  const [conversations, leads] = await Promise.all([
    db
      .selectFrom('conversations')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('phone', 'in', phones)
      .execute(),
    db
      .selectFrom('leads')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('phone', 'in', phones)
      .execute(),
  ]);
  return {
    conversationOf: new Map(conversations.map((row) => [row.phone, row])),
    leadOf: new Map(leads.map((row) => [row.phone, row])),
  };
}

export type ConversationRows = Awaited<ReturnType<typeof conversationRows>>;

/** The states of `phones` from their rows and opt-out holds, read together by a caller that reads more beside them. */
export function conversationStatesOf(
  account: StateAccount,
  phones: readonly string[],
  { conversationOf, leadOf }: ConversationRows,
  holds: OptOutHolds,
): Map<string, ConversationState> {
  return new Map(
    phones.map((phone) => [
      phone,
      toConversationState(account, conversationOf.get(phone), leadOf.get(phone), holds, phone),
    ]),
  );
}

/**
 * `conversationState` for many numbers of one account, in three queries whatever their number (a command
 * deciding for several conversations at once).
 */
export async function conversationStates(
  db: Kysely<Database>,
  keys: SubjectKeys,
  account: StateAccount,
  phones: readonly string[],
): Promise<Map<string, ConversationState>> {
  const wanted = [...new Set(phones)];
  if (wanted.length === 0) return new Map();
  const [rows, holds] = await Promise.all([
    conversationRows(db, account.id, wanted),
    optOutHolds(db, keys, account.id, wanted),
  ]);
  return conversationStatesOf(account, wanted, rows, holds);
}
