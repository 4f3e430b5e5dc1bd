import type { Admin } from 'kafkajs';
import { sql } from 'kysely';
import type { TopicOffsets } from '../db/schema';
import { topicNames } from '@leadline/events';
import { makeTopicsReadOnly, messageLimits, restoreMessageLimits } from '../kafka';
import { LOG_FENCE_LOCK, type LogGeneration } from '../log-generations';
import type { Mirror } from './mirror';
import { endsOf, sameOffsets, slot } from './offsets';
import type { MigrateLogDeps } from './options';

/**
 * Writes resume where a run that died with the fence up left the old generation read-only: its topics
 * get their limits back before anything else.
 */
export async function liftLeftoverFence(deps: MigrateLogDeps, target: number) {
  const row = await deps.db
    .selectFrom('log_generations')
    .select('write_protected')
    .where('generation', '=', target)
    .executeTakeFirstOrThrow();
  if (!row.write_protected) return;
  deps.log?.('an earlier run stopped with its fence up: the old generation takes writes again');
  await restoreMessageLimits(deps.admin, new Map(Object.entries(row.write_protected)));
  await deps.db
    .updateTable('log_generations')
    .set({ write_protected: null, fenced_at: null })
    .where('generation', '=', target)
    .execute();
}

const LOCK_NOT_AVAILABLE = '55P03';

export class FenceNotTaken extends Error {}

/**
 * The cutover, with the write fence up: producers are refused (commands) or wait (facts); the old
 * generation is made read-only at the broker, so its end, read next, is final; the copy reaches that
 * end; the old generation stops and the new one becomes active, in one transaction; the fence comes
 * down. Anything failing before the switch leaves producers on the old generation, as they were.
 */
export async function cutover(
  deps: MigrateLogDeps,
  source: LogGeneration,
  target: LogGeneration,
  mirror: Mirror,
  options: { fenceWaitMs: number; tailCopyMs: number },
): Promise<{ fenceMs: number; ends: TopicOffsets; starts: TopicOffsets }> {
  const { db, admin } = deps;
  const sourceTopics = Object.values(topicNames(deps.prefix, source.generation));
  const targetTopics = Object.values(topicNames(deps.prefix, target.generation));
  return db.connection().execute(async (connection) => {
    const raised = Date.now();
    await sql`select set_config('lock_timeout', ${`${options.fenceWaitMs}ms`}, false)`.execute(connection);
    try {
      // Waits for the appends holding the fence; meanwhile new ones are refused (or wait, facts).
      await sql`select pg_advisory_lock(${LOG_FENCE_LOCK})`.execute(connection);
    } catch (error) {
      if ((error as { code?: string }).code !== LOCK_NOT_AVAILABLE) throw error;
      throw new FenceNotTaken(
        `appends in flight did not finish within ${options.fenceWaitMs} ms; the fence came down and nothing changed`,
      );
    } finally {
      await sql`reset lock_timeout`.execute(connection);
    }
    let switched = false;
    let limits: Map<string, string> | undefined;
    try {
      limits = await messageLimits(admin, sourceTopics);
      // Recorded before the topics change, so a run that dies now gives them back when run again.
      await db
        .updateTable('log_generations')
        .set({ fenced_at: new Date(), write_protected: JSON.stringify(Object.fromEntries(limits)) })
        .where('generation', '=', target.generation)
        .execute();
      await makeTopicsReadOnly(admin, sourceTopics);
      const ends = await endsOf(admin, sourceTopics);
      mirror.setLimits(ends);
      await mirror.reached(ends, Date.now() + options.tailCopyMs);
      if (!sameOffsets(ends, await endsOf(admin, sourceTopics))) {
        throw new Error('migrate-log: records landed on the old generation after it was made read-only');
      }
      const starts = await endsOf(admin, targetTopics);
      await db.transaction().execute(async (trx) => {
        const now = new Date();
        await trx
          .updateTable('log_generations')
          .set({ state: 'draining', end_offsets: JSON.stringify(ends) })
          .where('generation', '=', source.generation)
          .execute();
        await trx
          .updateTable('log_generations')
          .set({
            state: 'active',
            start_offsets: JSON.stringify(starts),
            activated_at: now,
            write_protected: null,
          })
          .where('generation', '=', target.generation)
          .execute();
      });
      switched = true;
      return { fenceMs: Date.now() - raised, ends, starts };
    } finally {
      if (!switched) {
        mirror.clearLimits();
        if (limits) {
          await restoreMessageLimits(admin, limits);
          await db
            .updateTable('log_generations')
            .set({ fenced_at: null, write_protected: null })
            .where('generation', '=', target.generation)
            .execute();
        }
      }
      await sql`select pg_advisory_unlock(${LOG_FENCE_LOCK})`.execute(connection);
    }
  });
}

/** Records of the old generation not yet copied. */
export async function copyLag(admin: Admin, mirror: Mirror, topics: readonly string[]) {
  let lag = 0n;
  for (const [topic, offsets] of Object.entries(await endsOf(admin, topics))) {
    offsets.forEach((end, partition) => {
      const left = BigInt(end) - (mirror.progress.get(slot(topic, partition)) ?? 0n);
      if (left > 0n) lag += left;
    });
  }
  return lag;
}
