import { sql } from 'kysely';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { requireAccount } from '../accounts/account-stream';
import type { AppDeps } from '../app-deps';
import { count as counter, idParam } from '../http/fields';
import { resolvePeriod } from './period';

const counters = [
  'conversations',
  'messages_sent',
  'messages_received',
  'leads_imported',
  'documents_collected',
] as const;

// Strict: a misspelt or unknown parameter (`periode=`, a client's `?null`) is a 400, never silently the
// current month.
const usageQuery = z.strictObject({
  // One string with one pattern, not a union of an enum and a pattern: generators make a wrapper class
  // of a union, which Java's client cannot put in a query string.
  period: z
    .string()
    .max(8)
    .regex(/^(current|previous|\d{4}-(0[1-9]|1[0-2]))$/, 'Must be current, previous or YYYY-MM.')
    .default('current')
    .meta({ example: '2026-01' })
    .describe('`current` (default), `previous`, or a UTC month `YYYY-MM`.'),
  account_id: idParam('Only this account.').optional(),
  group_by: z
    .enum(['account'])
    .optional()
    .describe('`account` fills `by_account` with a per-account breakdown.'),
});

const count = counter();
const usageResponse = z
  .object({
    period: z
      .string()
      .regex(/^\d{4}-(0[1-9]|1[0-2])$/)
      .meta({ description: 'The UTC month, `YYYY-MM`.', example: '2026-01' }),
    totals: z
      .object({
        conversations: count,
        messages_sent: count,
        messages_received: count,
        leads_imported: count,
        documents_collected: count,
        sequences_completed: count,
        active_accounts: count.describe('Accounts that were active at some time in the period.'),
      })
      .meta({ id: 'UsageTotals' }),
    by_account: z
      .array(
        z
          .object({
            account_id: z.uuid(),
            account_name: z.string(),
            conversations: count,
            messages_sent: count,
            messages_received: count,
            leads_imported: count,
            documents_collected: count,
          })
          .meta({ id: 'AccountUsage' }),
      )
      .max(100_000),
  })
  .meta({ id: 'Usage' });

export const usageRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { db, clock }) => {
  app.get(
    '/usage',
    {
      schema: {
        tags: ['Usage'],
        operationId: 'getUsage',
        summary: 'Usage counters for billing',
        description:
          'Counted per UTC month as events happen, and exact after any replay of the log. `leads_imported` counts ' +
          'leads created by import (not leads who texted first). `active_accounts` counts accounts that existed and ' +
          'were not deactivated at some time in the period. `by_account` lists those accounts and any other with ' +
          'usage in the period when `group_by=account`, and is empty otherwise. An unknown query parameter is a 400.',
        querystring: usageQuery,
        response: { 200: usageResponse },
      },
    },
    async (request) => {
      const { account_id, group_by } = request.query;
      const period = resolvePeriod(request.query.period, clock.now());
      if (account_id) await requireAccount(db, request, account_id);

      // Accounts active at some time in the period or with usage in it, with their counters (zero where
      // nothing happened).
      const activeInPeriod = sql<boolean>`accounts.created_at < ${period.end}
        and (accounts.deactivated_at is null or accounts.deactivated_at >= ${period.start})`;
      let accounts = db
        .selectFrom('accounts')
        .leftJoin('usage_counters', (join) =>
          join
            .onRef('usage_counters.account_id', '=', 'accounts.id')
            .on('usage_counters.period', '=', period.name),
        )
        .where('accounts.partner_id', '=', request.partner.id)
        .where((eb) => eb.or([activeInPeriod, eb('usage_counters.account_id', 'is not', null)]));
      if (account_id) accounts = accounts.where('accounts.id', '=', account_id);
      const rows = await accounts
        .select([
          'accounts.id as account_id',
          'accounts.name as account_name',
          activeInPeriod.as('active'),
          ...[...counters, 'sequences_completed' as const].map((counter) =>
            sql<number>`coalesce(${sql.ref(`usage_counters.${counter}`)}, 0)::int`.as(counter),
          ),
        ])
        .orderBy('accounts.created_at')
        .orderBy('accounts.id')
        .execute();

      const sum = (field: (typeof counters)[number] | 'sequences_completed') =>
        rows.reduce((total, row) => total + Number(row[field]), 0);
      return {
        period: period.name,
        totals: {
          ...Object.fromEntries(counters.map((counter) => [counter, sum(counter)])),
          sequences_completed: sum('sequences_completed'),
          active_accounts: rows.filter((row) => row.active).length,
        } as z.infer<typeof usageResponse>['totals'],
        by_account:
          group_by === 'account'
            ? (rows.map((row) => ({
                account_id: row.account_id,
                account_name: row.account_name,
                ...Object.fromEntries(counters.map((counter) => [counter, Number(row[counter])])),
              })) as z.infer<typeof usageResponse>['by_account'])
            : [],
      };
    },
  );
};
