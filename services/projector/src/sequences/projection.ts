import { enrollmentChange, type EnrollmentChange, type EnrollmentFields } from '@leadline/domain';
import type { DomainEvent, EventOf } from '@leadline/events';
import type { Database } from '@leadline/runtime';
import { sql, type Transaction } from 'kysely';
import { defineProjection } from '../projection';
import { runsByType } from '../runs';
import { addUsage } from '../usage/counters';
import { addToTotals, countById } from '../usage/totals';

type Trx = Transaction<Database>;

/** `stats.active_sequences` counts the account's sequences with `is_active` true. */
async function recountActiveSequences(trx: Trx, accountIds: ReadonlySet<string>) {
  if (accountIds.size === 0) return;
  await sql`update accounts set active_sequences = (select count(*) from sequences
      where sequences.account_id = accounts.id and is_active)::int
    where accounts.id = any(${[...accountIds]}::text[])`.execute(trx);
}

/** The enrollment columns a change may set, with their SQL types (for a batch's recordset). */
const columnTypes: Record<keyof EnrollmentFields, string> = {
  status: 'text',
  current_step: 'int',
  next_step_at: 'timestamptz',
  awaiting_ai: 'boolean',
  replied: 'boolean',
  hold_reason: 'text',
};
type WhenField = Exclude<keyof EnrollmentChange['when'], 'notRemoved'>;

/** A change's value as its column stores it (JSON for a recordset: dates as ISO strings). */
const stored = (value: unknown) => (value instanceof Date ? value.toISOString() : value);

/**
 * What one event does to the enrollments it is about (the domain's `enrollmentChange`, the same rule a
 * decision evolves its state by), as one statement; returns the enrollments it changed.
 */
async function applyChange(trx: Trx, change: EnrollmentChange, event: DomainEvent): Promise<string[]> {
  const at = event.occurred_at;
  const set = Object.fromEntries(Object.entries(change.set).map(([key, value]) => [key, stored(value)]));
  let query = trx
    .updateTable('sequence_enrollments')
    .set({ ...set, ...(change.ends && { ended_at: at }), updated_at: at });
  const { target, when } = change;
  switch (target.by) {
    case 'id':
      query = query.where('id', '=', target.enrollment_id);
      break;
    case 'phone':
      // Only enrollments that began by the event: on a replay the row already holds its final state,
      // and an enrollment begun later (after a START, say) is not touched by an earlier event.
      query = query
        .where('account_id', '=', event.account_id!)
        .where('phone', '=', target.phone)
        .where('started_at', '<=', new Date(at));
      break;
    case 'lead':
      query = query.where('lead_id', '=', target.lead_id);
      break;
    case 'sequence':
      query = query.where('sequence_id', '=', target.sequence_id);
      break;
    case 'account':
      query = query.where('account_id', '=', event.account_id!);
      break;
    default: {
      const unknown: never = target;
      throw new Error(`Unknown target ${String(unknown)}`);
    }
  }
  for (const field of Object.keys(when) as (keyof EnrollmentChange['when'])[]) {
    query =
      field === 'notRemoved'
        ? query.where('status', '<>', 'removed')
        : query.where(field, '=', when[field] as never);
  }
  const changed = await query.returning('id').execute();
  return changed.map((row) => row.id);
}

/** Changes by id with the same fields: one statement can apply them all. */
const shapeOf = (change: EnrollmentChange) =>
  change.target.by === 'id'
    ? `${Object.keys(change.when).sort().join()}|${Object.keys(change.set).sort().join()}|${change.ends ?? ''}`
    : undefined;

/**
 * A run of changes to enrollments by id, all of one shape, as one statement (1,000 steps a sequencer
 * decided at once are one UPDATE, not 1,000).
 */
async function applyChangesTogether(
  trx: Trx,
  changes: readonly { change: EnrollmentChange; event: DomainEvent }[],
): Promise<string[]> {
  const { change: first } = changes[0]!;
  const whenFields = Object.keys(first.when).filter((field) => field !== 'notRemoved') as WhenField[];
  const setFields = Object.keys(first.set) as (keyof EnrollmentFields)[];
  const rows = changes.map(({ change, event }) => ({
    id: (change.target as { enrollment_id: string }).enrollment_id,
    at: event.occurred_at,
    ...Object.fromEntries(whenFields.map((field) => [`w_${field}`, change.when[field]])),
    ...Object.fromEntries(setFields.map((field) => [`s_${field}`, stored(change.set[field])])),
  }));
  const columns = [
    sql`id text`,
    sql`at timestamptz`,
    ...whenFields.map((field) => sql`${sql.id(`w_${field}`)} ${sql.raw(columnTypes[field])}`),
    ...setFields.map((field) => sql`${sql.id(`s_${field}`)} ${sql.raw(columnTypes[field])}`),
  ];
  const assignments = [
    ...setFields.map((field) => sql`${sql.id(field)} = ${sql.ref(`u.s_${field}`)}`),
    ...(first.ends ? [sql`ended_at = u.at`] : []),
    sql`updated_at = u.at`,
  ];
  const conditions = [
    sql`e.id = u.id`,
    ...whenFields.map((field) => sql`${sql.ref(`e.${field}`)} = ${sql.ref(`u.w_${field}`)}`),
    ...(first.when.notRemoved ? [sql`e.status <> 'removed'`] : []),
  ];
  const changed = await sql<{ id: string }>`
    update sequence_enrollments e set ${sql.join(assignments)}
    from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as u(${sql.join(columns)})
    where ${sql.join(conditions, sql` and `)}
    returning e.id`.execute(trx);
  return changed.rows.map((row) => row.id);
}

/**
 * Applies what a run of events does to enrollments; returns the enrollments changed. A run of one shape
 * naming each enrollment once is one statement; otherwise (one enrollment twice, such as two holds of
 * it, where the last must win) the events go one by one, in log order.
 */
async function applyEnrollmentChanges(trx: Trx, run: readonly DomainEvent[]): Promise<Set<string>> {
  const changes = run.flatMap((event) => {
    const change = enrollmentChange(event);
    return change ? [{ change, event }] : [];
  });
  const shape = changes[0] && shapeOf(changes[0].change);
  const ids = changes.map(({ change }) => (change.target as { enrollment_id?: string }).enrollment_id);
  const together =
    changes.length > 1 &&
    shape !== undefined &&
    changes.every(({ change }) => shapeOf(change) === shape) &&
    new Set(ids).size === ids.length;
  if (together) return new Set(await applyChangesTogether(trx, changes));
  const changed = new Set<string>();
  for (const { change, event } of changes)
    for (const id of await applyChange(trx, change, event)) changed.add(id);
  return changed;
}

/** Completions count once each: an enrollment the run actually completed now. */
async function countCompletions(
  trx: Trx,
  run: readonly EventOf<'sequence.completed'>[],
  done: ReadonlySet<string>,
) {
  const counted = run.filter((event) => done.has(event.data.enrollment_id));
  await addToTotals(
    trx,
    { table: 'sequences', column: 'completed_count' },
    countById(counted.map((event) => event.data.sequence_id)),
  );
  await addUsage(trx, 'sequences_completed', counted);
}

/**
 * New enrollments at step 0, one statement for all of them. A reactivation replaces the lead's previous
 * enrollment in the sequence; the same enrollment seen twice changes nothing (nor the count).
 */
async function enroll(
  trx: Trx,
  event: { account_id: string; occurred_at: string },
  sequence: { sequence_id: string; steps_version: number; total_steps: number },
  enrollments: readonly { enrollment_id: string; lead_id: string; phone: string; next_step_at: string }[],
) {
  const sequenceName = await trx
    .selectFrom('sequences')
    .select('name')
    .where('id', '=', sequence.sequence_id)
    .executeTakeFirst();
  const written = await trx
    .insertInto('sequence_enrollments')
    .values(
      enrollments.map((enrollment) => ({
        id: enrollment.enrollment_id,
        account_id: event.account_id,
        sequence_id: sequence.sequence_id,
        sequence_name: sequenceName?.name ?? '',
        lead_id: enrollment.lead_id,
        phone: enrollment.phone,
        status: 'active' as const,
        steps_version: sequence.steps_version,
        total_steps: sequence.total_steps,
        current_step: 0,
        next_step_at: enrollment.next_step_at,
        awaiting_ai: false,
        replied: false,
        hold_reason: null,
        started_at: event.occurred_at,
        ended_at: null,
        updated_at: event.occurred_at,
      })),
    )
    .onConflict((oc) =>
      oc
        .columns(['sequence_id', 'lead_id'])
        .doUpdateSet((eb) => ({
          id: eb.ref('excluded.id'),
          sequence_name: eb.ref('excluded.sequence_name'),
          phone: eb.ref('excluded.phone'),
          status: eb.ref('excluded.status'),
          steps_version: eb.ref('excluded.steps_version'),
          total_steps: eb.ref('excluded.total_steps'),
          current_step: eb.ref('excluded.current_step'),
          next_step_at: eb.ref('excluded.next_step_at'),
          awaiting_ai: eb.ref('excluded.awaiting_ai'),
          replied: eb.ref('excluded.replied'),
          hold_reason: eb.ref('excluded.hold_reason'),
          started_at: eb.ref('excluded.started_at'),
          ended_at: eb.ref('excluded.ended_at'),
          updated_at: eb.ref('excluded.updated_at'),
        }))
        .whereRef('sequence_enrollments.id', '<>', 'excluded.id'),
    )
    .returning('id')
    .execute();
  if (written.length > 0) {
    await trx
      .updateTable('sequences')
      .set({ enrolled_count: sql`enrolled_count + ${written.length}` })
      .where('id', '=', sequence.sequence_id)
      .execute();
  }
}

/** The events that write sequences and create enrollments, one at a time. */
async function applyOne(trx: Trx, event: SequenceRowEvent, touchedAccounts: Set<string>) {
  switch (event.type) {
    case 'sequence.created': {
      const { data } = event;
      await trx
        .insertInto('sequences')
        .values({
          id: data.sequence_id,
          account_id: event.account_id,
          name: data.name,
          description: data.description,
          is_active: data.is_active,
          is_default: data.is_default,
          steps: JSON.stringify(data.steps),
          steps_version: data.steps_version,
          created_at: event.occurred_at,
          updated_at: event.occurred_at,
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
      await trx
        .insertInto('sequence_step_versions')
        .values({
          sequence_id: data.sequence_id,
          version: data.steps_version,
          steps: JSON.stringify(data.steps),
        })
        .onConflict((oc) => oc.columns(['sequence_id', 'version']).doNothing())
        .execute();
      touchedAccounts.add(event.account_id);
      return;
    }
    case 'sequence.updated': {
      const { steps, ...changes } = event.data.changes;
      await trx
        .updateTable('sequences')
        .set({ ...changes, ...(steps && { steps: JSON.stringify(steps) }), updated_at: event.occurred_at })
        .where('id', '=', event.data.sequence_id)
        .execute();
      if (steps && changes.steps_version) {
        await trx
          .insertInto('sequence_step_versions')
          .values({
            sequence_id: event.data.sequence_id,
            version: changes.steps_version,
            steps: JSON.stringify(steps),
          })
          .onConflict((oc) => oc.columns(['sequence_id', 'version']).doNothing())
          .execute();
      }
      if (changes.name !== undefined) {
        await trx
          .updateTable('sequence_enrollments')
          .set({ sequence_name: changes.name })
          .where('sequence_id', '=', event.data.sequence_id)
          .execute();
      }
      touchedAccounts.add(event.account_id);
      return;
    }
    case 'sequence.deleted':
      await trx.deleteFrom('sequences').where('id', '=', event.data.sequence_id).execute();
      touchedAccounts.add(event.account_id);
      return;
    case 'sequence.enrolled': {
      const { data } = event;
      await enroll(trx, event, data, [data]);
      return;
    }
    case 'sequence.leads_enrolled':
      await enroll(trx, event, event.data, event.data.enrollments);
      return;
    default: {
      const unhandled: never = event;
      throw new Error(`Unhandled event ${(unhandled as DomainEvent).type}`);
    }
  }
}

const handled = [
  'sequence.created',
  'sequence.updated',
  'sequence.deleted',
  'sequence.unenrolled',
  'sequence.enrolled',
  'sequence.leads_enrolled',
  'sequence.step_sent',
  'sequence.step_skipped',
  'sequence.step_deferred',
  'sequence.step_held',
  'sequence.step_held_for_consent',
  'sequence.ai_step_requested',
  'sequence.completed',
  'message.received',
  'lead.opted_out',
  'lead.deleted',
  'lead.consent_granted',
  'account.updated',
] as const;

/** Events applied one by one by `applyOne`; every other handled event only changes enrollments. */
const sequenceRowEvents = new Set([
  'sequence.created',
  'sequence.updated',
  'sequence.deleted',
  'sequence.enrolled',
  'sequence.leads_enrolled',
]);
type SequenceRowEvent = EventOf<
  | 'sequence.created'
  | 'sequence.updated'
  | 'sequence.deleted'
  | 'sequence.enrolled'
  | 'sequence.leads_enrolled'
>;

/**
 * Sequences (sequenceList / sequenceDetails, with their step versions and counters) and enrollments
 * (the lead's `sequence` block, conversations' `in_sequence`, and the due times the sequencer claims).
 * What an event does to enrollments is the domain's rule (`enrollmentChange`).
 */
export const sequencesProjection = defineProjection('sequences', handled, async (trx, events) => {
  const touchedAccounts = new Set<string>();
  for (const run of runsByType(events)) {
    const type = run[0]!.type;
    if (sequenceRowEvents.has(type)) {
      for (const event of run) await applyOne(trx, event as SequenceRowEvent, touchedAccounts);
    }
    // A deleted sequence's active enrollments are cancelled, after its row is gone.
    const changed = await applyEnrollmentChanges(trx, run);
    if (type === 'sequence.completed')
      await countCompletions(trx, run as EventOf<'sequence.completed'>[], changed);
  }
  await recountActiveSequences(trx, touchedAccounts);
});
