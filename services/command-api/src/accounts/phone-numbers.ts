import type { Database } from '@leadline/runtime';
import type { Transaction } from 'kysely';

/**
 * Takes the number for the account, or answers false if another account holds it. Concurrent takers
 * of one number wait on the primary key until the first transaction ends, so exactly one wins, with
 * or without any other lock.
 */
export async function reservePhoneNumber(
  trx: Transaction<Database>,
  reservation: { phone_number: string; account_id: string; partner_id: string },
): Promise<boolean> {
  const taken = await trx
    .insertInto('phone_number_reservations')
    .values(reservation)
    .onConflict((oc) => oc.column('phone_number').doNothing())
    .returning('account_id')
    .executeTakeFirst();
  return taken !== undefined;
}

export async function releasePhoneNumber(trx: Transaction<Database>, accountId: string): Promise<void> {
  await trx.deleteFrom('phone_number_reservations').where('account_id', '=', accountId).execute();
}
