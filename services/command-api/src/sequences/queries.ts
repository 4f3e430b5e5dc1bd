import type { Database } from '@leadline/runtime';
import type { Kysely, Selectable } from 'kysely';
import type { z } from 'zod';
import type { sequenceResponse } from './schemas';

type SequenceRow = Selectable<Database['sequences']>;

export function toSequenceResponse(row: SequenceRow): z.infer<typeof sequenceResponse> {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    is_active: row.is_active,
    is_default: row.is_default,
    steps: row.steps.map((step, order) => ({ order, ...step })),
    enrolled_count: row.enrolled_count,
    completed_count: row.completed_count,
    created_at: row.created_at.toISOString(),
  };
}

export async function listSequences(
  db: Kysely<Database>,
  accountId: string,
  page: { limit: number; offset: number },
) {
  const filtered = db.selectFrom('sequences').where('account_id', '=', accountId);
  const [rows, count] = await Promise.all([
    filtered.selectAll().orderBy('created_at').orderBy('id').limit(page.limit).offset(page.offset).execute(),
    filtered.select((eb) => eb.fn.countAll<string>().as('total')).executeTakeFirstOrThrow(),
  ]);
  return { sequences: rows.map(toSequenceResponse), total: Number(count.total) };
}

/** The lead's `sequence` block: its active enrollment, else its latest one. */
export async function leadSequence(db: Kysely<Database>, leadId: string) {
  const [first] = await leadEnrollments(db, leadId);
  if (!first) return null;
  const { started_at: _startedAt, ended_at: _endedAt, ...block } = first;
  return block;
}

/** Every enrollment of a lead, active ones first, then the latest; `paused` as in the lead's block. */
export async function leadEnrollments(db: Kysely<Database>, leadId: string) {
  const rows = await db
    .selectFrom('sequence_enrollments as e')
    .innerJoin('accounts as a', 'a.id', 'e.account_id')
    .leftJoin('sequences as s', 's.id', 'e.sequence_id')
    .select([
      'e.sequence_id',
      'e.sequence_name',
      'e.status',
      'e.current_step',
      'e.total_steps',
      'e.next_step_at',
      'e.hold_reason',
      'e.started_at',
      'e.ended_at',
      'a.status as account_status',
      's.is_active',
    ])
    .where('e.lead_id', '=', leadId)
    .where('e.status', '<>', 'removed')
    .orderBy((eb) => eb.case().when('e.status', '=', 'active').then(0).else(1).end())
    .orderBy('e.started_at', 'desc')
    .execute();
  return rows.map((row) => {
    const holdReason = row.status === 'active' ? row.hold_reason : null;
    return {
      sequence_id: row.sequence_id,
      name: row.sequence_name,
      status:
        row.status === 'active' && (row.account_status !== 'active' || row.is_active === false)
          ? ('paused' as const)
          : (row.status as Exclude<typeof row.status, 'removed'>),
      current_step: row.current_step,
      total_steps: row.total_steps,
      // A step held for consent has no time to go out: it goes once consent is recorded.
      next_step_at: holdReason === 'no_consent' ? null : (row.next_step_at?.toISOString() ?? null),
      hold_reason: holdReason,
      started_at: row.started_at.toISOString(),
      ended_at: row.ended_at?.toISOString() ?? null,
    };
  });
}
