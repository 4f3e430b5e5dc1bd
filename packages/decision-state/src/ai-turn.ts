import { aiPaused, DEFAULT_SENDING_WINDOW, stepHold, type AiTurnState } from '@leadline/domain';
import { optOutHoldsQuery, type Database } from '@leadline/runtime';
import { sql, type Kysely, type Selectable } from 'kysely';
import { consentStateOf, consentStatuses } from './consent';
import { conversationRows, conversationStatesOf, type SubjectKeys } from './conversation';
import { proactiveSends } from './sequence';

/** The account as an AI turn's decision reads it: its status, settings and sending window. */
export type AiAccount = Pick<
  Selectable<Database['accounts']>,
  'id' | 'status' | 'company_name' | 'ai_pause_minutes' | 'sending_window' | 'consent_required'
>;

export const loadAiAccount = (reader: Kysely<Database>, accountId: string): Promise<AiAccount | undefined> =>
  reader
    .selectFrom('accounts')
    .select(['id', 'status', 'company_name', 'ai_pause_minutes', 'sending_window', 'consent_required'])
    .where('id', '=', accountId)
    .executeTakeFirst();

/**
 * Which of `keys` were handled already, how many AI messages each of `phones` was sent in the last 24
 * hours, and the numbers' opt-out holds (see `optOutHolds`): one statement for the three, since every
 * AI turn reads them (its pre-check and its recording).
 */
async function turnChecks(
  reader: Kysely<Database>,
  subjects: SubjectKeys,
  accountId: string,
  keys: readonly string[],
  phones: readonly string[],
  now: Date,
) {
  const holds = optOutHoldsQuery(subjects, accountId, phones);
  const { rows } = await sql<{
    kind: 'handled' | 'today' | 'pending' | 'suppressed';
    value: string;
    count: string;
  }>`
    select hold as kind, value, 0::bigint as count from (${holds.query}) as holds
    union all
    select 'handled', turn_key, 0 from ai_handled_turns
    where account_id = ${accountId} and turn_key = any(${keys}::text[])
    union all
    select 'today', phone, count(*) from messages
    where account_id = ${accountId} and phone = any(${phones}::text[]) and direction = 'outbound'
      and source = 'ai' and sent_at > ${new Date(now.getTime() - 24 * 3600_000)}
    group by phone`.execute(reader);
  const handledKeys = new Set<string>();
  const todayOf = new Map<string, number>();
  for (const { kind, value, count } of rows) {
    if (kind === 'handled') handledKeys.add(value);
    else if (kind === 'today') todayOf.set(value, Number(count));
  }
  return {
    holds: holds.read(
      rows.flatMap(({ kind, value }) =>
        kind === 'pending' || kind === 'suppressed' ? [{ hold: kind, value }] : [],
      ),
    ),
    handledKeys,
    todayOf,
  };
}

/** One turn to load the state of: its number, its sequence step (if any), its keys, and whether its decision needs the checklist. */
export interface AiTurnRequest {
  phone: string;
  step: { enrollment_id: string; step_order: number } | null;
  keys: readonly string[];
  /** The checklist matters only to a proposal that collects something (not to skips and sends). */
  withChecklist: boolean;
}

/**
 * The state each turn of one account is decided against, in the order asked. Every query covers all
 * the turns' numbers at once (as the sequencer loads its steps), so a command recording many turns
 * reads about as much as one recording one.
 */
export async function aiTurnStates(
  reader: Kysely<Database>,
  subjects: SubjectKeys,
  account: AiAccount,
  requests: readonly AiTurnRequest[],
  now: Date,
): Promise<AiTurnState[]> {
  if (requests.length === 0) return [];
  const window = account.sending_window ?? DEFAULT_SENDING_WINDOW;
  const phones = [...new Set(requests.map((request) => request.phone))];
  const stepPhones = [...new Set(requests.flatMap((request) => (request.step ? [request.phone] : [])))];
  const enrollmentIds = requests.flatMap((request) => (request.step ? [request.step.enrollment_id] : []));
  const keys = requests.flatMap((request) => request.keys);
  const [rows, checks, requirements, sent, enrollments, consents] = await Promise.all([
    conversationRows(reader, account.id, phones),
    turnChecks(reader, subjects, account.id, keys, phones, now),
    requests.some((request) => request.withChecklist)
      ? reader
          .selectFrom('requirements')
          .select(['id', 'name', 'type', 'required'])
          .where('account_id', '=', account.id)
          .orderBy('created_at')
          .orderBy('id')
          .execute()
      : Promise.resolve([]),
    stepPhones.length === 0
      ? Promise.resolve(new Map<string, Date[]>())
      : proactiveSends(reader, account.id, window, stepPhones, now),
    enrollmentIds.length === 0
      ? Promise.resolve([])
      : reader
          .selectFrom('sequence_enrollments')
          .select(['id', 'status', 'current_step'])
          .where('id', 'in', enrollmentIds)
          .where('account_id', '=', account.id)
          .execute(),
    // Only a sequence step's message may be held for consent.
    stepPhones.length === 0 ? Promise.resolve(new Map()) : consentStatuses(reader, account.id, stepPhones),
  ]);
  // With the STOPs answered to Twilio whose decision is still queued: they silence the AI too.
  const conversations = conversationStatesOf(account, phones, rows, checks.holds);
  const checklistLeads = requests.flatMap(({ phone, withChecklist }) => {
    const lead = conversations.get(phone)?.lead;
    return withChecklist && lead ? [lead.lead_id] : [];
  });
  const collected =
    checklistLeads.length === 0
      ? []
      : await reader
          .selectFrom('lead_checklist_items')
          .select(['lead_id', 'requirement_id'])
          .where('lead_id', 'in', checklistLeads)
          .execute();
  const { handledKeys, todayOf } = checks;
  const enrollmentOf = new Map(enrollments.map((row) => [row.id, row]));
  return requests.map(({ phone, step, keys: turnKeys, withChecklist }) => {
    const conversation = conversations.get(phone)!;
    const leadId = conversation.lead?.lead_id;
    const enrollment = step && enrollmentOf.get(step.enrollment_id);
    return {
      ...conversation,
      handled: turnKeys.some((key) => handledKeys.has(key)),
      aiPaused: aiPaused(conversation.conversation, now),
      aiMessagesToday: todayOf.get(phone) ?? 0,
      requirements: withChecklist ? requirements : [],
      collected: new Set(collected.filter((row) => row.lead_id === leadId).map((row) => row.requirement_id)),
      stepHold: step ? stepHold(now, phone, window, sent.get(phone)) : null,
      stepEnrollmentActive: step
        ? enrollment?.status === 'active' && enrollment.current_step === step.step_order
        : null,
      consent: consentStateOf(account, consents, phone),
    };
  });
}
