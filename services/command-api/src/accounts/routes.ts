import type { EventOf } from '@leadline/events';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { DomainError, unavailable } from '@leadline/runtime';
import { decideAccount, decideAccountCreation, type AccountCommand } from '@leadline/domain';
import type { AppDeps } from '../app-deps';
import { commandContext } from '../http/auth';
import { executeOnAccount as executeOnAccountStream, requireAccount } from './account-stream';
import { releasePhoneNumber, reservePhoneNumber } from './phone-numbers';
import { reserveSlug } from './slug-reservations';
import { revokeEmbedTokens } from '../embed/tokens';
import {
  createdAccountResponse,
  invitedMemberResponse,
  listAccounts,
  toAccount,
  toAccountResponse,
  toTeamMemberResponse,
} from './queries';
import {
  accountListResponse,
  accountParams,
  accountResponse,
  createAccountBody,
  deactivateResponse,
  inviteTeamMemberBody,
  listAccountsQuery,
  releasedPhoneNumberResponse,
  teamListResponse,
  teamMemberResponse,
  updateAccountBody,
} from './schemas';

const tags = ['Accounts'];

export const accountRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const { db, commands, numbers, newId } = deps;

  async function isOwnNumber(request: FastifyRequest, phoneNumber: string) {
    try {
      return await numbers.isOwnNumber(phoneNumber);
    } catch (error) {
      request.log.warn({ err: error }, 'telephony number lookup failed');
      throw unavailable('telephony_unavailable', 'The telephony provider did not answer; retry shortly.');
    }
  }

  /** Bought before the command runs, so no lock or transaction waits on the provider. */
  async function provisionNumber(request: FastifyRequest, accountId: string) {
    try {
      return await numbers.provisionNumber(accountId);
    } catch (error) {
      request.log.warn({ err: error }, 'telephony number purchase failed');
      throw unavailable('telephony_unavailable', 'The telephony provider did not answer; retry shortly.');
    }
  }

  /** Runs a command on one of the caller's accounts; returns the events it appended. */
  function executeOnAccount(request: FastifyRequest, accountId: string, command: AccountCommand) {
    return executeOnAccountStream(commands, request, accountId, async (trx, account) => {
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
    }).then(async (outcome) => {
      // A deactivated account's embedded dashboards stop at once. The tokens are revoked, not only
      // refused while the account is deactivated, so a reactivation does not bring them back.
      if (outcome.events.some((event) => event.type === 'account.deactivated')) {
        await revokeEmbedTokens(db, accountId, deps.clock.now());
      }
      return outcome;
    });
  }

  app.post(
    '/accounts',
    {
      schema: {
        tags,
        operationId: 'createAccount',
        summary: 'Create an account',
        description:
          'Creates a sub-account with its own phone number (provisioned when `phone_number` is omitted) and isolated data. The slug is derived from the name and never changes.',
        body: createAccountBody,
        response: { 201: accountResponse },
      },
    },
    async (request, reply) => {
      const context = commandContext(request);
      const accountId = newId();
      const { phone_number, ...fields } = request.body;
      if (phone_number !== undefined && !(await isOwnNumber(request, phone_number))) {
        throw new DomainError(
          422,
          'phone_number_not_owned',
          'This number is not one of the numbers of our telephony account, so its SMS would never ' +
            'reach the account. Omit phone_number to get a new number.',
          { phone_number },
        );
      }
      const bought = phone_number === undefined ? await provisionNumber(request, accountId) : undefined;
      const number = bought?.phoneNumber ?? phone_number!;
      let events;
      try {
        ({ events } = await commands.execute({
          stream: { topic: 'account', accountId },
          context,
          // Uniqueness across accounts lives in the reservations' keys, and a new account has no
          // events yet: a creation decides on what its own transaction reads, under its own lock, and
          // waits for no projection before deciding (it still reads its write before answering).
          lockKeys: [`account:${accountId}`],
          consistency: 'none',
          async decide(trx) {
            // Both taken in this transaction: they commit with the append, or roll back if it fails.
            const slug = await reserveSlug(trx, {
              name: fields.name,
              account_id: accountId,
              partner_id: context.partnerId,
            });
            const reserved = await reservePhoneNumber(trx, {
              phone_number: number,
              account_id: accountId,
              partner_id: context.partnerId,
            });
            const command = {
              type: 'CreateAccount' as const,
              ...fields,
              phone_number: number,
              phone_number_provisioned: bought !== undefined,
            };
            return {
              events: decideAccountCreation(command, { slug, phoneNumberInUse: !reserved }),
              result: undefined,
            };
          },
        }));
      } catch (error) {
        // No account holds the number we bought for it: give it back rather than pay for it forever.
        if (bought) {
          await numbers.releaseNumber(bought).catch((releaseError: unknown) => {
            request.log.error(
              { err: releaseError, phone_number: number },
              'a number bought for an account that was not created could not be released',
            );
          });
        }
        throw error;
      }
      // Answered from the event: it is what the read model will hold, even if the projector is slow.
      return reply.status(201).send(createdAccountResponse(events[0] as EventOf<'account.created'>));
    },
  );

  app.get(
    '/accounts',
    {
      schema: {
        tags,
        operationId: 'listAccounts',
        summary: 'List accounts',
        description:
          "The partner's accounts, newest first, with their counters; filter by `status` or a name `search`.",
        querystring: listAccountsQuery,
        response: { 200: accountListResponse },
      },
    },
    async (request) => {
      const { rows, total } = await listAccounts(db, request.partner.id, request.query);
      const accounts = rows
        .map(toAccountResponse)
        .map(({ id, name, status, phone_number, stats, created_at }) => ({
          id,
          name,
          status,
          phone_number,
          stats,
          created_at,
        }));
      return { accounts, total, limit: request.query.limit, offset: request.query.offset };
    },
  );

  app.get(
    '/accounts/:id',
    {
      schema: {
        tags,
        operationId: 'getAccount',
        summary: 'Get an account',
        description:
          "The whole account with its branding, metadata and counters. Another partner's account is a 404.",
        params: accountParams,
        response: { 200: accountResponse },
      },
    },
    async (request) => toAccountResponse(await requireAccount(db, request, request.params.id)),
  );

  app.patch(
    '/accounts/:id',
    {
      schema: {
        tags,
        operationId: 'updateAccount',
        summary: 'Update an account',
        description: 'Returns the whole account after the change.',
        params: accountParams,
        body: updateAccountBody,
        response: { 200: accountResponse },
      },
    },
    async (request) => {
      await executeOnAccount(request, request.params.id, { type: 'UpdateAccount', ...request.body });
      return toAccountResponse(await requireAccount(db, request, request.params.id));
    },
  );

  app.delete(
    '/accounts/:id',
    {
      schema: {
        tags,
        operationId: 'deactivateAccount',
        summary: 'Deactivate an account',
        description:
          'Data is kept, the AI stops answering and sequences pause. Deactivating a deactivated account ' +
          'changes nothing and answers the same. PATCH `status: active` reactivates.',
        params: accountParams,
        response: { 200: deactivateResponse },
      },
    },
    async (request) => {
      const { id } = request.params;
      const { events } = await executeOnAccount(request, id, { type: 'DeactivateAccount' });
      // Deactivated now (the event says when), or already (the read model does).
      const deactivatedAt =
        events[0]?.occurred_at ?? (await requireAccount(db, request, id)).deactivated_at?.toISOString();
      return { id, status: 'deactivated' as const, deactivated_at: deactivatedAt! };
    },
  );

  app.post(
    '/accounts/:id/phone-number/release',
    {
      schema: {
        tags,
        operationId: 'releaseAccountPhoneNumber',
        summary: "Release a deactivated account's phone number",
        description:
          'A deactivated account keeps its number until it is released here. Afterwards the account ' +
          'receives no SMS on it (inbound messages to the number are refused as for any unknown number), ' +
          'another account may take it, and the account can no longer be reactivated. An active account ' +
          'is a 409 `account_active`; releasing twice answers the same.',
        params: accountParams,
        response: { 200: releasedPhoneNumberResponse },
      },
    },
    async (request) => {
      const { id } = request.params;
      const { events } = await executeOnAccount(request, id, { type: 'ReleasePhoneNumber' });
      const account = await requireAccount(db, request, id);
      return {
        id,
        phone_number: account.phone_number,
        released_at: events[0]?.occurred_at ?? account.phone_number_released_at!.toISOString(),
      };
    },
  );

  app.post(
    '/accounts/:id/team/invite',
    {
      schema: {
        tags,
        operationId: 'inviteTeamMember',
        summary: 'Invite a team member',
        description: 'Stores the member on the account; an e-mail already on the team is a 409.',
        params: accountParams,
        body: inviteTeamMemberBody,
        response: { 201: teamMemberResponse },
      },
    },
    async (request, reply) => {
      const { events } = await executeOnAccount(request, request.params.id, {
        type: 'InviteTeamMember',
        member_id: newId(),
        ...request.body,
      });
      return reply.status(201).send(invitedMemberResponse(events[0] as EventOf<'team_member.invited'>));
    },
  );

  app.get(
    '/accounts/:id/team',
    {
      schema: {
        tags,
        operationId: 'listTeamMembers',
        summary: 'List team members',
        description: 'The members invited to the account, in the order they were invited.',
        params: accountParams,
        response: { 200: teamListResponse },
      },
    },
    async (request) => {
      const row = await requireAccount(db, request, request.params.id);
      const members = await db
        .selectFrom('team_members')
        .selectAll()
        .where('account_id', '=', row.id)
        .orderBy('invited_at')
        .execute();
      return { team_members: members.map(toTeamMemberResponse) };
    },
  );
};
