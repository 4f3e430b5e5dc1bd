import type { EventOf } from '@leadline/events';
import type { Database } from '@leadline/runtime';
import { createQueryId, type CompiledQuery, type Kysely, type Selectable } from 'kysely';
import type { z } from 'zod';
import { DEFAULT_AI_PAUSE_MINUTES, type Account, DEFAULT_SENDING_WINDOW } from '@leadline/domain';
import type { accountResponse, teamMemberResponse } from './schemas';

type AccountRow = Selectable<Database['accounts']>;
type TeamMemberRow = Selectable<Database['team_members']>;

// Stand-ins the account read is compiled with, replaced by each call's values wherever they are bound.
const PARTNER = Symbol('partner_id');
const ACCOUNT = Symbol('account_id');
let accountRowQuery: CompiledQuery<AccountRow> | undefined;

/**
 * Every account read is scoped by the caller's partner: another partner's account does not exist.
 * Every account route reads it (it is a GET's only statement), so it is built and compiled once, not
 * afresh on every call as a kysely query is.
 */
export async function findAccountRow(
  db: Kysely<Database>,
  partnerId: string,
  accountId: string,
): Promise<AccountRow | undefined> {
  accountRowQuery ??= db
    .selectFrom('accounts')
    .selectAll()
    .where('partner_id', '=', PARTNER as unknown as string)
    .where('id', '=', ACCOUNT as unknown as string)
    .compile();
  const { rows } = await db.executeQuery<AccountRow>({
    ...accountRowQuery,
    queryId: createQueryId(),
    parameters: accountRowQuery.parameters.map((value) => (value === PARTNER ? partnerId : accountId)),
  });
  return rows[0];
}

export function toAccountResponse(row: AccountRow): z.infer<typeof accountResponse> {
  return {
    id: row.id,
    name: row.name,
    company_name: row.company_name,
    slug: row.slug,
    status: row.status,
    phone_number: row.phone_number,
    forwarding_number: row.forwarding_number,
    branding: { logo_url: row.logo_url, accent_color: row.accent_color },
    metadata: row.metadata,
    ai_pause_minutes: row.ai_pause_minutes,
    sending_window: row.sending_window ?? DEFAULT_SENDING_WINDOW,
    consent_required: row.consent_required,
    retention_days: row.retention_days,
    sending_rate: { messages_per_second: row.messages_per_second, daily_cap: row.daily_cap },
    created_at: row.created_at.toISOString(),
    deactivated_at: row.deactivated_at?.toISOString() ?? null,
    erased_at: row.erased_at?.toISOString() ?? null,
    stats: {
      total_leads: row.total_leads,
      total_conversations: row.total_conversations,
      active_sequences: row.active_sequences,
    },
  };
}

/** A new account as its creation event describes it: what the read model will hold. */
export function createdAccountResponse(event: EventOf<'account.created'>): z.infer<typeof accountResponse> {
  const {
    name,
    company_name,
    slug,
    phone_number,
    forwarding_number,
    branding,
    metadata,
    ai_pause_minutes,
    sending_window,
    consent_required,
    retention_days,
    sending_rate,
  } = event.data;
  return {
    id: event.account_id,
    name,
    company_name,
    slug,
    status: 'active',
    phone_number,
    forwarding_number,
    branding,
    metadata,
    ai_pause_minutes: ai_pause_minutes ?? DEFAULT_AI_PAUSE_MINUTES,
    sending_window: sending_window ?? DEFAULT_SENDING_WINDOW,
    consent_required: consent_required ?? false,
    retention_days: retention_days ?? null,
    sending_rate: sending_rate ?? { messages_per_second: null, daily_cap: null },
    created_at: event.occurred_at,
    deactivated_at: null,
    erased_at: null,
    stats: { total_leads: 0, total_conversations: 0, active_sequences: 0 },
  };
}

export function invitedMemberResponse(
  event: EventOf<'team_member.invited'>,
): z.infer<typeof teamMemberResponse> {
  const { member_id, ...member } = event.data;
  return {
    id: member_id,
    account_id: event.account_id,
    ...member,
    status: 'invited',
    invited_at: event.occurred_at,
  };
}

export function toTeamMemberResponse(row: TeamMemberRow): z.infer<typeof teamMemberResponse> {
  return {
    id: row.id,
    account_id: row.account_id,
    email: row.email,
    name: row.name,
    role: row.role as z.infer<typeof teamMemberResponse>['role'],
    phone_number: row.phone_number,
    forwarding_number: row.forwarding_number,
    status: 'invited',
    invited_at: row.invited_at.toISOString(),
  };
}

export function toAccount(row: AccountRow): Account {
  return {
    id: row.id,
    status: row.status,
    name: row.name,
    company_name: row.company_name,
    forwarding_number: row.forwarding_number,
    branding: { logo_url: row.logo_url, accent_color: row.accent_color },
    metadata: row.metadata,
    ai_pause_minutes: row.ai_pause_minutes,
    phone_number: row.phone_number,
    phone_number_released: row.phone_number_released_at !== null,
    sending_window: row.sending_window ?? DEFAULT_SENDING_WINDOW,
    consent_required: row.consent_required,
    retention_days: row.retention_days,
    sending_rate: { messages_per_second: row.messages_per_second, daily_cap: row.daily_cap },
  };
}

export async function listAccounts(
  db: Kysely<Database>,
  partnerId: string,
  query: {
    limit: number;
    offset: number;
    status?: 'active' | 'deactivated' | undefined;
    search?: string | undefined;
  },
) {
  let filtered = db.selectFrom('accounts').where('partner_id', '=', partnerId);
  if (query.status) filtered = filtered.where('status', '=', query.status);
  if (query.search) filtered = filtered.where('name', 'ilike', `%${escapeLike(query.search)}%`);
  const [rows, count] = await Promise.all([
    filtered
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(query.limit)
      .offset(query.offset)
      .execute(),
    filtered.select((eb) => eb.fn.countAll<string>().as('total')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.total) };
}

/** `%` and `_` in a search term are literal characters, not wildcards. */
export const escapeLike = (term: string) => term.replace(/[\\%_]/g, (character) => `\\${character}`);
