import type { EventOf } from '@leadline/events';
import { decideAccountCreation } from '@leadline/domain';
import { DomainError, unavailable } from '@leadline/runtime';
import type { FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { AppDeps } from '../app-deps';
import { commandContext } from '../http/auth';
import { reservePhoneNumber } from './phone-numbers';
import type { createAccountBody } from './schemas';
import { reserveSlug } from './slug-reservations';

async function isOwnNumber(numbers: AppDeps['numbers'], request: FastifyRequest, phoneNumber: string) {
  try {
    return await numbers.isOwnNumber(phoneNumber);
  } catch (error) {
    request.log.warn({ err: error }, 'telephony number lookup failed');
    throw unavailable('telephony_unavailable', 'The telephony provider did not answer; retry shortly.');
  }
}

/** Bought before the command runs, so no lock or transaction waits on the provider. */
async function provisionNumber(numbers: AppDeps['numbers'], request: FastifyRequest, accountId: string) {
  try {
    return await numbers.provisionNumber(accountId);
  } catch (error) {
    request.log.warn({ err: error }, 'telephony number purchase failed');
    throw unavailable('telephony_unavailable', 'The telephony provider did not answer; retry shortly.');
  }
}

/**
 * Creates an account with its number: the partner's own number (checked to be ours) or one bought for it
 * before the command runs; a number bought for an account that is then not created is given back.
 */
export async function createAccount(
  { commands, numbers, newId }: Pick<AppDeps, 'commands' | 'numbers' | 'newId'>,
  request: FastifyRequest,
  body: z.infer<typeof createAccountBody>,
): Promise<EventOf<'account.created'>> {
  const context = commandContext(request);
  const accountId = newId();
  const { phone_number, ...fields } = body;
  if (phone_number !== undefined && !(await isOwnNumber(numbers, request, phone_number))) {
    throw new DomainError(
      422,
      'phone_number_not_owned',
      'This number is not one of the numbers of our telephony account, so its SMS would never ' +
        'reach the account. Omit phone_number to get a new number.',
      { phone_number },
    );
  }
  const bought = phone_number === undefined ? await provisionNumber(numbers, request, accountId) : undefined;
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
  return events[0] as EventOf<'account.created'>;
}
