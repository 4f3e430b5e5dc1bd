import type { DomainEvent } from '@leadline/events';
import { conflict, notFound, type CommandBus, type Database, type EventToAppend } from '@leadline/runtime';
import type { FastifyRequest } from 'fastify';
import type { Selectable, Transaction } from 'kysely';
import { commandContext } from '../http/auth';
import { findAccountRow } from './queries';

export type AccountRow = Selectable<Database['accounts']>;

/**
 * Runs a command on one of the caller's accounts through the decide-and-append path: every writer of
 * an account's stream takes the same lock, and decides after the account's partition is projected.
 * Another partner's account is a 404, decided inside the lock like everything else.
 *
 * An erased account takes no more writes (409 `account_erased`): anything written to it would be
 * personal data or a way back to using it (a lead, a team member, a reactivation). Only the commands
 * that forget or let go (`onErased: 'proceed'`: erasing again, deactivating, releasing its number) go on.
 */
export async function executeOnAccount<R>(
  commands: CommandBus,
  request: FastifyRequest,
  accountId: string,
  decide: (
    trx: Transaction<Database>,
    account: AccountRow,
  ) => Promise<{ events: EventToAppend[]; result: R }>,
  { onErased = 'refuse' }: { onErased?: 'refuse' | 'proceed' } = {},
): Promise<{ events: DomainEvent[]; result: R }> {
  const context = commandContext(request);
  return commands.execute({
    stream: { topic: 'account', accountId },
    context,
    lockKeys: [`account:${accountId}`],
    consistency: 'partition',
    async decide(trx) {
      const account = await findAccountRow(trx, context.partnerId, accountId);
      if (!account) throw notFound('account');
      if (account.erased_at !== null && onErased === 'refuse') {
        throw conflict(
          'account_erased',
          'This account was erased; it takes no more writes. Create a new account for this customer.',
        );
      }
      return decide(trx, account);
    },
  });
}

/** For reads: the caller's account, or a 404. */
export async function requireAccount(
  db: Parameters<typeof findAccountRow>[0],
  request: FastifyRequest,
  accountId: string,
) {
  const account = await findAccountRow(db, request.partner.id, accountId);
  if (!account) throw notFound('account');
  return account;
}
