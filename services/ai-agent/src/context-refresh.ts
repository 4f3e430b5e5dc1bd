import { fetchPage } from '@leadline/runtime';
import { pageFetchEvents } from '@leadline/domain';
import type { Clock, CommandBus, Database } from '@leadline/runtime';
import type { Kysely } from 'kysely';

export interface ContextRefreshDeps {
  db: Kysely<Database>;
  commands: CommandBus;
  clock: Clock;
  allowPrivateTargets: boolean;
  /** A page is fetched again this long after its last attempt (CONTEXT_URL_REFRESH_HOURS). */
  refreshMs: number;
  batchSize?: number;
}

/**
 * Fetches the context pages that are due again, with conditional requests, and records each outcome:
 * new text, unchanged, or a failure that keeps the last good text. The fetch happens outside any
 * lock; the record is a short decide-and-append that checks the URL still exists.
 */
export async function refreshContextUrls(deps: ContextRefreshDeps): Promise<number> {
  const cutoff = new Date(deps.clock.now().getTime() - deps.refreshMs);
  const due = await deps.db
    .selectFrom('context_urls as u')
    .innerJoin('accounts as a', 'a.id', 'u.account_id')
    .select(['u.id', 'u.account_id', 'a.partner_id', 'u.url', 'u.etag', 'u.last_modified', 'u.content_hash'])
    .where('a.status', '=', 'active')
    .where((eb) => eb(eb.fn.coalesce('u.last_attempt_at', 'u.created_at'), '<=', cutoff))
    .orderBy(({ fn }) => fn.coalesce('u.last_attempt_at', 'u.created_at'))
    .limit(deps.batchSize ?? 20)
    .execute();
  for (const row of due) {
    const fetched = await fetchPage(row.url, {
      allowPrivate: deps.allowPrivateTargets,
      previous: { etag: row.etag, lastModified: row.last_modified, contentHash: row.content_hash },
    });
    await deps.commands.execute({
      stream: { topic: 'account', accountId: row.account_id },
      context: {
        partnerId: row.partner_id,
        actor: { kind: 'system', service: 'ai-agent' },
        correlationId: `context-refresh:${row.id}`,
      },
      lockKeys: [`account:${row.account_id}`],
      consistency: 'partition',
      async decide(trx) {
        const still = await trx
          .selectFrom('context_urls')
          .select('id')
          .where('id', '=', row.id)
          .executeTakeFirst();
        return { events: still ? pageFetchEvents(row.id, fetched) : [], result: undefined };
      },
    });
  }
  return due.length;
}
