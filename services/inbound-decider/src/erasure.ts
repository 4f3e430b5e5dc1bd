import type { EventOf } from '@leadline/events';
import { phonesOfSubject, type Database, type PersonalDataKeys } from '@leadline/runtime';
import type { Kysely } from 'kysely';

/**
 * Forgets an erased lead's answered opt-outs whose decision is made. A guard keeps a number in clear
 * only to bridge the moments between a STOP answered to Twilio and its decision reaching the read
 * models; it is normally swept once the STOP is stored, but an erasure can take the stored STOP away
 * first, and the guard would then keep the number for good. Once decided, the opt-out is on the log
 * (and every send is decided against the read models caught up with it), so the guard can go.
 * A guard whose STOP is not decided yet stays: it is all that stops a message to a number that asked
 * for none, and the usual sweep removes it once its decision is stored.
 */
export async function forgetDecidedOptOutGuards(
  db: Kysely<Database>,
  keys: Pick<PersonalDataKeys, 'subjectOf'>,
  event: EventOf<'lead.erased'>,
): Promise<void> {
  const accountId = event.account_id;
  const guards = await db
    .selectFrom('opt_out_guards')
    .select('phone')
    .where('account_id', '=', accountId)
    .execute();
  const phones = phonesOfSubject(
    keys,
    accountId,
    event.data.subject,
    guards.map((guard) => guard.phone),
  );
  if (phones.length === 0) return;
  await db
    .deleteFrom('opt_out_guards')
    .where('account_id', '=', accountId)
    .where('phone', 'in', phones)
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('inbound_receipts as r')
          .select('r.message_sid')
          .whereRef('r.message_sid', '=', 'opt_out_guards.message_sid')
          .where('r.decided_at', 'is not', null),
      ),
    )
    .execute();
}
