import type { FastifyRequest } from 'fastify';
import { decideAccount, type AccountCommand } from '@leadline/domain';
import type { AppDeps } from '../app-deps';
import { revokeEmbedTokens } from '../embed/tokens';
import { executeOnAccount } from './account-stream';
import { releasePhoneNumber } from './phone-numbers';
import { toAccount } from './queries';

/** Runs a command on one of the caller's accounts; returns the events it appended. */
export function executeAccountCommand(
  { commands, db, clock }: Pick<AppDeps, 'commands' | 'db' | 'clock'>,
  request: FastifyRequest,
  accountId: string,
  command: AccountCommand,
) {
  // What lets an account go is still taken once it is erased; anything else would bring it back into use.
  const allowedWhenErased = command.type === 'DeactivateAccount' || command.type === 'ReleasePhoneNumber';
  return executeOnAccount(
    commands,
    request,
    accountId,
    async (trx, account) => {
      // Gone with the append: if the log refuses the event, the transaction rolls the release back.
      if (command.type === 'ReleasePhoneNumber') await releasePhoneNumber(trx, accountId);
      const team = await trx
        .selectFrom('team_members')
        .select('email')
        .where('account_id', '=', accountId)
        .execute();
      const state = {
        account: toAccount(account),
        teamEmails: new Set(team.map((member) => member.email.toLowerCase())),
      };
      return { events: decideAccount(command, state), result: undefined };
    },
    { onErased: allowedWhenErased ? 'proceed' : 'refuse' },
  ).then(async (outcome) => {
    // A deactivated account's embedded dashboards stop at once. The tokens are revoked, not only
    // refused while the account is deactivated, so a reactivation does not bring them back.
    if (outcome.events.some((event) => event.type === 'account.deactivated')) {
      await revokeEmbedTokens(db, accountId, clock.now());
    }
    return outcome;
  });
}
