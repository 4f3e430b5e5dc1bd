import { decideErasure, type ErasureDecision } from '@leadline/domain';
import type { Database, PersonalDataKeys } from '@leadline/runtime';
import { sql, type Kysely, type Transaction } from 'kysely';

/** What the account holds of a phone, for deciding its erasure (inside the account's command lock). */
export async function decideErasureOf(
  trx: Transaction<Database>,
  keys: Pick<PersonalDataKeys, 'subjectOf'>,
  accountId: string,
  phone: string,
): Promise<{ subject: string; decision: ErasureDecision }> {
  const subject = keys.subjectOf(accountId, 'lead', phone);
  const lead = await trx
    .selectFrom('leads')
    .select('id')
    .where('account_id', '=', accountId)
    .where('phone', '=', phone)
    .executeTakeFirst();
  const conversation = await trx
    .selectFrom('conversations')
    .select('phone')
    .where('account_id', '=', accountId)
    .where('phone', '=', phone)
    .executeTakeFirst();
  // The keys say whether the log holds anything of the person (a live key sealed it), and the erased
  // ones are the tombstone of an earlier erasure: the subject's hash and a time, never the phone.
  const keyState = await trx
    .selectFrom('personal_data_keys')
    .select([
      sql<boolean>`bool_or(erased_at is null)`.as('live'),
      sql<Date | null>`max(erased_at)`.as('erased_at'),
    ])
    .where('account_id', '=', accountId)
    .where('subject', '=', subject)
    .executeTakeFirst();
  const decision = decideErasure({
    phone,
    subject,
    leadId: lead?.id ?? null,
    holdsData: Boolean(lead || conversation || keyState?.live),
    erasedAt: keyState?.erased_at ?? null,
  });
  return { subject, decision };
}

/**
 * The command API's own records of the people: stored answers of idempotent requests that carry a phone
 * or a lead id of theirs (an import's answer echoes the lead). They are replays for 24 hours, not data
 * anyone needs once the person is erased; a retry of such a request runs again and finds nothing.
 * An account's erasure passes many: they are looked for a few hundred at a time.
 */
export async function purgeOperationalRecords(
  db: Kysely<Database>,
  partnerId: string,
  phonesAndLeadIds: readonly string[],
): Promise<void> {
  const needles = phonesAndLeadIds.map((value) => Buffer.from(value, 'utf8'));
  for (let at = 0; at < needles.length; at += 200) {
    const chunk = needles.slice(at, at + 200);
    await db
      .deleteFrom('idempotency_keys')
      .where('partner_id', '=', partnerId)
      .where((eb) =>
        eb.or(chunk.map((needle) => eb(sql<number>`position(${needle}::bytea in response_body)`, '>', 0))),
      )
      .execute();
  }
}
