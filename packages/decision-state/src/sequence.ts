import {
  DEFAULT_SENDING_WINDOW,
  leadLocation,
  stateRules,
  type Enrollment,
  type EnrollState,
  type Sequence,
  type SendingWindow,
  type StepState,
} from '@leadline/domain';
import { optedOutPhones, optOutHolds, type Database } from '@leadline/runtime';
import type { Kysely, Selectable } from 'kysely';
import { consentState, consentStateOf, consentStatuses } from './consent';
import {
  conversationRows,
  conversationState,
  conversationView,
  toLead,
  type SubjectKeys,
} from './conversation';

type AccountRow = Selectable<Database['accounts']>;
type SequenceRow = Selectable<Database['sequences']>;
type EnrollmentRow = Selectable<Database['sequence_enrollments']>;

export function toSequence(row: SequenceRow): Sequence {
  const { id, name, description, is_active, is_default, steps, steps_version } = row;
  return { id, name, description, is_active, is_default, steps, steps_version };
}

export function findSequenceRow(db: Kysely<Database>, accountId: string, sequenceId: string) {
  return db
    .selectFrom('sequences')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', sequenceId)
    .executeTakeFirst();
}

export async function accountSequences(db: Kysely<Database>, accountId: string): Promise<Sequence[]> {
  const rows = await db.selectFrom('sequences').selectAll().where('account_id', '=', accountId).execute();
  return rows.map(toSequence);
}

export function toEnrollment(row: EnrollmentRow): Enrollment {
  const { updated_at: _u, started_at: _s, ended_at: _e, account_id: _a, ...enrollment } = row;
  return enrollment;
}

export const activeEnrollmentCount = async (db: Kysely<Database>, sequenceId: string) =>
  Number(
    (
      await db
        .selectFrom('sequence_enrollments')
        .select((eb) => eb.fn.countAll<string>().as('count'))
        .where('sequence_id', '=', sequenceId)
        .where('status', '=', 'active')
        .executeTakeFirstOrThrow()
    ).count,
  );

type StepAccount = Pick<
  AccountRow,
  'id' | 'status' | 'company_name' | 'ai_pause_minutes' | 'sending_window' | 'consent_required'
>;

const withWindow = (account: StepAccount) => ({
  status: account.status,
  company_name: account.company_name,
  ai_pause_minutes: account.ai_pause_minutes,
  sending_window: account.sending_window ?? DEFAULT_SENDING_WINDOW,
});

/**
 * The proactive messages (sequence steps, AI-written ones included) each of these numbers got from the
 * account in the 24 hours before `now`, for the numbers whose state caps them (others need none).
 * Replies to a lead's own messages (`ai`, `manual`) are not solicitations and do not count.
 */
export async function proactiveSends(
  db: Kysely<Database>,
  accountId: string,
  window: SendingWindow,
  phones: readonly string[],
  now: Date,
): Promise<Map<string, Date[]>> {
  const capped = phones.filter((phone) => {
    const { state } = leadLocation(phone, window.time_zone);
    return window.enabled && state !== null && stateRules[state]?.dailyCap !== undefined;
  });
  if (capped.length === 0) return new Map();
  const rows = await db
    .selectFrom('messages')
    .select(['phone', 'sent_at'])
    .where('account_id', '=', accountId)
    .where('phone', 'in', capped)
    .where('direction', '=', 'outbound')
    .where('source', '=', 'sequence')
    .where('sent_at', '>', new Date(now.getTime() - 86_400_000))
    .execute();
  const byPhone = Map.groupBy(rows, (row) => row.phone);
  return new Map([...byPhone].map(([phone, sent]) => [phone, sent.map((row) => row.sent_at)]));
}

/** What enrolling a lead reads: the sequence, the lead, its conversation and its enrollment in it. */
export async function enrollState(
  db: Kysely<Database>,
  keys: SubjectKeys,
  account: StepAccount,
  sequenceId: string,
  phone: string,
  now: Date,
): Promise<EnrollState> {
  // A STOP answered to Twilio but not yet decided refuses the enrollment as a projected one does.
  const [sequence, conversation, consent] = await Promise.all([
    findSequenceRow(db, account.id, sequenceId),
    conversationState(db, keys, account, phone),
    consentState(db, account, phone),
  ]);
  const enrollment = conversation.lead
    ? await db
        .selectFrom('sequence_enrollments')
        .selectAll()
        .where('sequence_id', '=', sequenceId)
        .where('lead_id', '=', conversation.lead.lead_id)
        .executeTakeFirst()
    : undefined;
  const withSteps = withWindow(account);
  const sent = await proactiveSends(db, account.id, withSteps.sending_window, [phone], now);
  return {
    account: withSteps,
    sequence: sequence && toSequence(sequence),
    lead: conversation.lead,
    conversation: conversation.conversation,
    enrollment: enrollment && toEnrollment(enrollment),
    sent: sent.get(phone) ?? [],
    optOutPending: conversation.optOutPending,
    consent,
  };
}

/** What deciding an enrollment's due step reads, inside the command's transaction. */
export async function stepState(
  db: Kysely<Database>,
  keys: SubjectKeys,
  enrollmentId: string,
  now: Date,
): Promise<StepState | undefined> {
  const row = await db
    .selectFrom('sequence_enrollments')
    .selectAll()
    .where('id', '=', enrollmentId)
    .executeTakeFirst();
  if (!row) return undefined;
  const account = await db
    .selectFrom('accounts')
    .selectAll()
    .where('id', '=', row.account_id)
    .executeTakeFirst();
  if (!account) return undefined;
  const [sequence, version, conversation, consent] = await Promise.all([
    db
      .selectFrom('sequences')
      .select(['id', 'is_active'])
      .where('id', '=', row.sequence_id)
      .executeTakeFirst(),
    db
      .selectFrom('sequence_step_versions')
      .select('steps')
      .where('sequence_id', '=', row.sequence_id)
      .where('version', '=', row.steps_version)
      .executeTakeFirst(),
    // With the opt-out answered but not yet decided: a step waits for it as for a projected one.
    conversationState(db, keys, account, row.phone),
    consentState(db, account, row.phone),
  ]);
  const withSteps = withWindow(account);
  const sent = await proactiveSends(db, account.id, withSteps.sending_window, [row.phone], now);
  return {
    account: withSteps,
    sequence,
    enrollment: toEnrollment(row),
    steps: version?.steps ?? [],
    lead: conversation.lead,
    conversation: conversation.conversation,
    sent: sent.get(row.phone) ?? [],
    optOutPending: conversation.optOutPending,
    consent,
  };
}

/** What `auto_sequence` imports read: the default sequence, the leads' enrollments in it, opt-outs. */
export async function autoEnrollState(
  db: Kysely<Database>,
  keys: SubjectKeys,
  account: StepAccount,
  leads: readonly { lead_id: string; phone: string }[],
) {
  const defaultRow = await db
    .selectFrom('sequences')
    .selectAll()
    .where('account_id', '=', account.id)
    .where('is_default', '=', true)
    .executeTakeFirst();
  const leadIds = leads.map((lead) => lead.lead_id);
  const [enrollments, optedOut] = await Promise.all([
    defaultRow && leadIds.length > 0
      ? db
          .selectFrom('sequence_enrollments')
          .select(['lead_id', 'status'])
          .where('sequence_id', '=', defaultRow.id)
          .where('lead_id', 'in', leadIds)
          .execute()
      : [],
    // Projected opt-outs, the ones answered to Twilio whose decision is still queued, and the ones kept
    // past an erasure (a number re-imported since).
    optedOutPhones(
      db,
      keys,
      account.id,
      leads.map((lead) => lead.phone),
    ),
  ]);
  return {
    account: withWindow(account),
    defaultSequence: defaultRow && toSequence(defaultRow),
    enrolled: new Map(enrollments.map((row) => [row.lead_id, row.status === 'active'])),
    optedOut,
  };
}

/** The active enrollments of each of `phones` (one query, whatever their number); none for a phone without. */
export async function activeEnrollments(
  db: Kysely<Database>,
  accountId: string,
  phones: readonly string[],
): Promise<Map<string, Enrollment[]>> {
  const enrollments = new Map<string, Enrollment[]>(phones.map((phone) => [phone, []]));
  if (phones.length === 0) return enrollments;
  const rows = await db
    .selectFrom('sequence_enrollments')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('phone', 'in', [...new Set(phones)])
    .where('status', '=', 'active')
    .execute();
  for (const row of rows) enrollments.get(row.phone)?.push(toEnrollment(row));
  return enrollments;
}

/**
 * `stepState` for many enrollments of one account at once (the sequencer decides a claimed batch
 * together): one query per table instead of one per enrollment.
 */
export async function accountStepStates(
  db: Kysely<Database>,
  keys: SubjectKeys,
  accountId: string,
  enrollmentIds: readonly string[],
  now: Date,
): Promise<Map<string, StepState>> {
  const states = new Map<string, StepState>();
  if (enrollmentIds.length === 0) return states;
  const [account, rows] = await Promise.all([
    db.selectFrom('accounts').selectAll().where('id', '=', accountId).executeTakeFirst(),
    db
      .selectFrom('sequence_enrollments')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('id', 'in', [...enrollmentIds])
      .execute(),
  ]);
  if (!account || rows.length === 0) return states;
  const sequenceIds = [...new Set(rows.map((row) => row.sequence_id))];
  const phones = [...new Set(rows.map((row) => row.phone))];
  const withSteps = withWindow(account);
  const [sequences, versions, { conversationOf, leadOf }, sent, holds, consents] = await Promise.all([
    db.selectFrom('sequences').select(['id', 'is_active']).where('id', 'in', sequenceIds).execute(),
    db.selectFrom('sequence_step_versions').selectAll().where('sequence_id', 'in', sequenceIds).execute(),
    conversationRows(db, accountId, phones),
    proactiveSends(db, accountId, withSteps.sending_window, phones, now),
    // An opt-out answered to Twilio whose decision is still queued holds the step as a projected one
    // does; one kept past an erasure is the conversation's.
    optOutHolds(db, keys, accountId, phones),
    consentStatuses(db, accountId, phones),
  ]);
  const sequenceById = new Map(sequences.map((row) => [row.id, row]));
  const stepsOf = new Map(versions.map((row) => [`${row.sequence_id}/${row.version}`, row.steps]));
  for (const row of rows) {
    const conversation = conversationOf.get(row.phone);
    const lead = leadOf.get(row.phone);
    states.set(row.id, {
      account: withSteps,
      sequence: sequenceById.get(row.sequence_id),
      enrollment: toEnrollment(row),
      steps: stepsOf.get(`${row.sequence_id}/${row.steps_version}`) ?? [],
      lead: lead && toLead(lead),
      conversation: conversationView(conversation, holds.suppressed.has(row.phone)),
      sent: sent.get(row.phone) ?? [],
      optOutPending: holds.pending.has(row.phone),
      consent: consentStateOf(account, consents, row.phone),
    });
  }
  return states;
}
