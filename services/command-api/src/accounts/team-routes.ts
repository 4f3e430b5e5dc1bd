import type { EventOf } from '@leadline/events';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../app-deps';
import { requireAccount } from './account-stream';
import { invitedMemberResponse, toTeamMemberResponse } from './queries';
import {
  accountParams,
  inviteTeamMemberBody,
  releasedPhoneNumberResponse,
  teamListResponse,
  teamMemberResponse,
} from './schemas';
import { executeAccountCommand } from './account-command';

const tags = ['Accounts'];

/** An account's phone number released, and its team: invite a member, list them. */
export const accountTeamRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const { db, newId } = deps;

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
      const { events } = await executeAccountCommand(deps, request, id, { type: 'ReleasePhoneNumber' });
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
      const { events } = await executeAccountCommand(deps, request, request.params.id, {
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
