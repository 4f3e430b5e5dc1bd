import type { Database, ProjectionProgress } from '@leadline/runtime';
import { sql, type Kysely } from 'kysely';
import { checklistProgress } from '@leadline/domain';

/** What the dashboard shows of an account, one signature per conversation and per lead. */
export interface AccountSnapshot {
  conversations: Map<string, string>;
  leads: Map<string, string>;
  completeChecklists: Set<string>;
}

export interface AccountChanges {
  /** Phones whose conversation changed (new messages, delivery statuses, handoff flag, AI pause, opt-out). */
  conversations: string[];
  /** Phones whose lead changed (status, fields, checklist progress, sequence), appeared or was deleted. */
  leads: string[];
  /** Phones whose checklist became complete. */
  checklist_completed: string[];
  /** Set when changes may have been missed (a resumed stream): refetch everything shown. */
  resync?: true;
}

export async function accountSnapshot(db: Kysely<Database>, accountId: string): Promise<AccountSnapshot> {
  const [conversations, statuses, leads, requirements, items, enrollments] = await Promise.all([
    db
      .selectFrom('conversations')
      .select(['phone', 'message_count', 'needs_handoff', 'ai_paused_until', 'opted_out', 'last_message_at'])
      .where('account_id', '=', accountId)
      .execute(),
    // Messages keep no update time: how many of a conversation's messages are in each delivery status
    // (and held for each reason) changes whenever one of them moves on (queued, held, sent, delivered,
    // failed).
    db
      .selectFrom('messages')
      .select((eb) => ['phone', 'status', 'held_reason', eb.fn.countAll<string>().as('count')])
      .where('account_id', '=', accountId)
      .where('direction', '=', 'outbound')
      .groupBy(['phone', 'status', 'held_reason'])
      .orderBy('phone')
      .orderBy('status')
      .orderBy('held_reason')
      .execute(),
    db
      .selectFrom('leads')
      .select(['id', 'phone', 'status', 'updated_at'])
      .where('account_id', '=', accountId)
      .execute(),
    db.selectFrom('requirements').select(['id', 'required']).where('account_id', '=', accountId).execute(),
    db
      .selectFrom('lead_checklist_items')
      .select(['lead_id', 'requirement_id'])
      .where('account_id', '=', accountId)
      .execute(),
    // The lead's sequence block: enrolled, a step sent, paused, completed or taken out.
    db
      .selectFrom('sequence_enrollments')
      .select(['lead_id', 'id', 'status', 'current_step', 'updated_at'])
      .where('account_id', '=', accountId)
      .orderBy('lead_id')
      .orderBy('id')
      .execute(),
  ]);
  const sequenceStates = new Map<string, string>();
  for (const row of enrollments) {
    const entry = `${row.id}:${row.status}:${row.current_step}:${row.updated_at.getTime()},`;
    sequenceStates.set(row.lead_id, `${sequenceStates.get(row.lead_id) ?? ''}${entry}`);
  }
  const collected = new Map<string, Set<string>>();
  for (const item of items) {
    const set = collected.get(item.lead_id) ?? new Set<string>();
    set.add(item.requirement_id);
    collected.set(item.lead_id, set);
  }
  const snapshot: AccountSnapshot = {
    conversations: new Map(),
    leads: new Map(),
    completeChecklists: new Set(),
  };
  const deliveries = new Map<string, string>();
  for (const row of statuses) {
    deliveries.set(
      row.phone,
      `${deliveries.get(row.phone) ?? ''}${row.status}:${row.held_reason ?? ''}:${row.count},`,
    );
  }
  for (const row of conversations) {
    snapshot.conversations.set(
      row.phone,
      [
        row.message_count,
        row.needs_handoff,
        row.ai_paused_until?.getTime(),
        row.opted_out,
        row.last_message_at?.getTime(),
        deliveries.get(row.phone) ?? '',
      ].join('|'),
    );
  }
  for (const lead of leads) {
    const progress = checklistProgress(requirements, collected.get(lead.id) ?? new Set());
    snapshot.leads.set(
      lead.phone,
      [
        lead.id,
        lead.status,
        lead.updated_at.getTime(),
        progress.completed_count,
        progress.total_count,
        sequenceStates.get(lead.id) ?? '',
      ].join('|'),
    );
    if (progress.complete) snapshot.completeChecklists.add(lead.phone);
  }
  return snapshot;
}

const changedKeys = (before: Map<string, string>, after: Map<string, string>) => [
  ...new Set([
    ...[...after].filter(([key, value]) => before.get(key) !== value).map(([key]) => key),
    ...[...before.keys()].filter((key) => !after.has(key)),
  ]),
];

/** Pure: what changed between two snapshots of one account. */
export function diffSnapshots(before: AccountSnapshot, after: AccountSnapshot): AccountChanges {
  return {
    conversations: changedKeys(before.conversations, after.conversations),
    leads: changedKeys(before.leads, after.leads),
    checklist_completed: [...after.completeChecklists].filter(
      (phone) => !before.completeChecklists.has(phone),
    ),
  };
}

export const hasChanges = (changes: AccountChanges) =>
  changes.resync === true ||
  changes.conversations.length + changes.leads.length + changes.checklist_completed.length > 0;

/**
 * The stream position: the sum of every partition's projected offset. Offsets only grow, so the sum
 * does too, and a client resuming from an older position knows it may have missed something.
 */
export async function streamPosition(db: Kysely<Database>): Promise<string> {
  const { rows } = await sql<{
    position: string | null;
  }>`select sum(next_offset)::text as position from projection_checkpoints`.execute(db);
  return rows[0]?.position ?? '0';
}

export interface AccountWatch {
  /** Where the stream stands: the id of the next event. */
  position: string;
  stop(): void;
}

/**
 * Watches one account through the projector's NOTIFY: after each projected batch the account is read
 * again and compared with what was last seen, so only real changes of this account are sent. Batches
 * that arrive while a comparison runs are folded into the next one.
 */
export async function watchAccount(
  deps: { db: Kysely<Database>; progress: ProjectionProgress },
  accountId: string,
  onChanges: (changes: AccountChanges, position: string) => void | Promise<void>,
  onError: (error: unknown) => void,
): Promise<AccountWatch> {
  // The position is read before the state, so a client resuming from it never skips a change.
  const startPosition = await streamPosition(deps.db);
  let last = await accountSnapshot(deps.db, accountId);
  let running = false;
  let again = false;
  let stopped = false;
  const check = async () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        const position = await streamPosition(deps.db);
        const next = await accountSnapshot(deps.db, accountId);
        const changes = diffSnapshots(last, next);
        last = next;
        watch.position = position;
        if (!stopped && hasChanges(changes)) await onChanges(changes, position);
      } while (again && !stopped);
    } catch (error) {
      onError(error);
    } finally {
      running = false;
    }
  };
  const watch: AccountWatch = {
    position: startPosition,
    stop() {
      stopped = true;
      unsubscribe();
    },
  };
  const unsubscribe = deps.progress.subscribe(() => void check());
  // Anything projected between the first read and the subscription.
  void check();
  return watch;
}
