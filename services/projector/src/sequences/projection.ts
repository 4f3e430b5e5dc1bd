import type { DomainEvent, EventOf } from '@leadline/events';
import type { Database } from '@leadline/runtime';
import { sql, type Transaction } from 'kysely';
import { defineProjection } from '../projection';
import { runsByType } from '../runs';
import { addUsage } from '../usage/counters';

type Trx = Transaction<Database>;

/** `stats.active_sequences` counts the account's sequences with `is_active` true. */
async function recountActiveSequences(trx: Trx, accountIds: ReadonlySet<string>) {
  for (const accountId of accountIds) {
    await trx
      .updateTable('accounts')
      .set({
        active_sequences: sql`(select count(*) from sequences
          where account_id = ${accountId} and is_active)::int`,
      })
      .where('id', '=', accountId)
      .execute();
  }
}

/** A run of step events as the rows their one statement updates. */
const stepRows = (
  run: readonly EventOf<'sequence.step_sent' | 'sequence.step_skipped' | 'sequence.step_held'>[],
) =>
  run.map((event) => ({
    id: event.data.enrollment_id,
    step: event.data.step_order,
    next: event.data.next_step_at,
    at: event.occurred_at,
  }));

/**
 * Moves enrollments past their steps with one statement; a step done twice (a redelivery) matches no
 * row the second time. A run naming one enrollment twice (two steps in one batch) goes step by step.
 */
async function stepsDone(trx: Trx, run: readonly EventOf<'sequence.step_sent' | 'sequence.step_skipped'>[]) {
  if (new Set(run.map((event) => event.data.enrollment_id)).size < run.length) {
    for (const event of run) await stepDone(trx, event);
    return;
  }
  const rows = stepRows(run);
  await sql`
    update sequence_enrollments e set current_step = u.step + 1, next_step_at = u.next,
      awaiting_ai = false, updated_at = u.at
    from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as u(id text, step int, next timestamptz, at timestamptz)
    where e.id = u.id and e.current_step = u.step`.execute(trx);
}

/**
 * Holds with one statement (an import's step 0 held for 1,000 leads at night), as `applyOne` does
 * each: the enrollment still at the held step shows its new time. A run that holds one enrollment
 * twice is applied one by one, so the last hold wins.
 */
async function stepsHeld(trx: Trx, run: readonly EventOf<'sequence.step_held'>[]) {
  if (new Set(run.map((event) => event.data.enrollment_id)).size < run.length) return false;
  const rows = stepRows(run);
  await sql`
    update sequence_enrollments e set next_step_at = u.next, updated_at = u.at
    from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as u(id text, step int, next timestamptz, at timestamptz)
    where e.id = u.id and e.current_step = u.step and e.status = 'active'`.execute(trx);
  return true;
}

/** Completions with a few statements; a completion seen twice matches no active row the second time. */
async function completed(trx: Trx, run: readonly EventOf<'sequence.completed'>[]) {
  const ended = await sql<{ id: string }>`
    update sequence_enrollments e set status = 'completed', next_step_at = null, ended_at = u.at, updated_at = u.at
    from jsonb_to_recordset(${JSON.stringify(run.map((event) => ({ id: event.data.enrollment_id, at: event.occurred_at })))}::jsonb)
      as u(id text, at timestamptz)
    where e.id = u.id and e.status = 'active'
    returning e.id`.execute(trx);
  const done = new Set(ended.rows.map((row) => row.id));
  const counted = run.filter((event) => done.has(event.data.enrollment_id));
  const bySequence = new Map<string, number>();
  for (const event of counted)
    bySequence.set(event.data.sequence_id, (bySequence.get(event.data.sequence_id) ?? 0) + 1);
  for (const [sequenceId, count] of bySequence) {
    await trx
      .updateTable('sequences')
      .set({ completed_count: sql`completed_count + ${count}` })
      .where('id', '=', sequenceId)
      .execute();
  }
  await addUsage(trx, 'sequences_completed', counted);
}

/** Moves an enrollment past `step_order`; a step done twice (a redelivery) matches no row the second time. */
async function stepDone(trx: Trx, event: EventOf<'sequence.step_sent' | 'sequence.step_skipped'>) {
  await trx
    .updateTable('sequence_enrollments')
    .set({
      current_step: event.data.step_order + 1,
      next_step_at: event.data.next_step_at,
      awaiting_ai: false,
      updated_at: event.occurred_at,
    })
    .where('id', '=', event.data.enrollment_id)
    .where('current_step', '=', event.data.step_order)
    .execute();
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

async function applyOne(trx: Trx, event: SequenceEvent, touchedAccounts: Set<string>) {
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
      await trx
        .updateTable('sequence_enrollments')
        .set({
          status: 'cancelled',
          next_step_at: null,
          ended_at: event.occurred_at,
          updated_at: event.occurred_at,
        })
        .where('sequence_id', '=', event.data.sequence_id)
        .where('status', '=', 'active')
        .execute();
      touchedAccounts.add(event.account_id);
      return;
    case 'sequence.unenrolled':
      await trx
        .updateTable('sequence_enrollments')
        .set({
          status: 'cancelled',
          next_step_at: null,
          awaiting_ai: false,
          ended_at: event.occurred_at,
          updated_at: event.occurred_at,
        })
        .where('id', '=', event.data.enrollment_id)
        .where('status', '=', 'active')
        .execute();
      return;
    case 'sequence.enrolled': {
      const { data } = event;
      await enroll(trx, event, data, [data]);
      return;
    }
    case 'sequence.leads_enrolled':
      await enroll(trx, event, event.data, event.data.enrollments);
      return;
    case 'sequence.step_sent':
    case 'sequence.step_skipped':
      await stepDone(trx, event);
      return;
    case 'sequence.step_deferred':
    case 'sequence.step_held':
      // `next_step_at` shows when the held step goes out (an AI-written one stays awaited meanwhile).
      await trx
        .updateTable('sequence_enrollments')
        .set({ next_step_at: event.data.next_step_at, updated_at: event.occurred_at })
        .where('id', '=', event.data.enrollment_id)
        .where('current_step', '=', event.data.step_order)
        .where('status', '=', 'active')
        .execute();
      return;
    case 'sequence.ai_step_requested':
      await trx
        .updateTable('sequence_enrollments')
        .set({ awaiting_ai: true, next_step_at: null, updated_at: event.occurred_at })
        .where('id', '=', event.data.enrollment_id)
        .where('current_step', '=', event.data.step_order)
        .where('status', '=', 'active')
        .where('awaiting_ai', '=', false)
        .execute();
      return;
    case 'sequence.completed':
      await completed(trx, [event]);
      return;
    case 'message.received':
      // skip_if_replied looks at any inbound message since the enrollment began. Only enrollments that
      // began before the message: on a replay the row already holds its final state, and a later
      // enrollment must not see an earlier reply.
      await trx
        .updateTable('sequence_enrollments')
        .set({ replied: true })
        .where('account_id', '=', event.account_id)
        .where('phone', '=', event.data.phone)
        .where('status', '=', 'active')
        .where('started_at', '<=', new Date(event.occurred_at))
        .execute();
      return;
    case 'lead.opted_out':
      // An opted-out number gets nothing from a sequence: its enrollments stop for good; enrolling it
      // again after it opts back in starts over.
      await trx
        .updateTable('sequence_enrollments')
        .set({
          status: 'opted_out',
          next_step_at: null,
          ended_at: event.occurred_at,
          updated_at: event.occurred_at,
        })
        .where('account_id', '=', event.account_id)
        .where('phone', '=', event.data.phone)
        .where('status', '=', 'active')
        // As for replies: an enrollment begun after the opt-out (and a START) is not stopped by it.
        .where('started_at', '<=', new Date(event.occurred_at))
        .execute();
      return;
    case 'lead.deleted':
      // Kept as `removed` rather than deleted, so an enrollment seen again on a replay is not counted again.
      await trx
        .updateTable('sequence_enrollments')
        .set({
          status: 'removed',
          next_step_at: null,
          ended_at: event.occurred_at,
          updated_at: event.occurred_at,
        })
        .where('lead_id', '=', event.data.lead_id)
        .where('status', '<>', 'removed')
        .execute();
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
  'sequence.ai_step_requested',
  'sequence.completed',
  'message.received',
  'lead.opted_out',
  'lead.deleted',
] as const;
type SequenceEvent = EventOf<(typeof handled)[number]>;

/**
 * Sequences (sequenceList / sequenceDetails, with their step versions and counters) and enrollments
 * (the lead's `sequence` block, conversations' `in_sequence`, and the due times the sequencer claims).
 */
export const sequencesProjection = defineProjection('sequences', handled, async (trx, events) => {
  const touchedAccounts = new Set<string>();
  for (const run of runsByType(events)) {
    const type = run[0]!.type;
    if (run.length > 1 && (type === 'sequence.step_sent' || type === 'sequence.step_skipped')) {
      await stepsDone(trx, run as EventOf<'sequence.step_sent' | 'sequence.step_skipped'>[]);
      continue;
    }
    if (type === 'sequence.completed') {
      await completed(trx, run as EventOf<'sequence.completed'>[]);
      continue;
    }
    if (
      run.length > 1 &&
      type === 'sequence.step_held' &&
      (await stepsHeld(trx, run as EventOf<'sequence.step_held'>[]))
    )
      continue;
    for (const event of run) await applyOne(trx, event, touchedAccounts);
  }
  await recountActiveSequences(trx, touchedAccounts);
});
