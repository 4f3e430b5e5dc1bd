import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from './db/schema';
import type { PersonalDataKeys } from './personal-data/keys';
import { subjectOfPhone } from './personal-data/subjects';

type Reader = Kysely<Database> | Transaction<Database>;
type SubjectOf = Pick<PersonalDataKeys, 'subjectOf'>;

/** What holds numbers back besides their conversation's own `opted_out`. */
export interface OptOutHolds {
  /** An opt-out answered to Twilio whose decision is still queued (a guard row the inbound route writes). */
  pending: Set<string>;
  /**
   * An opt-out that outlived the erasure of its person (`opt_out_suppressions`, by the number's keyed
   * hash): the number is opted out as if its conversation said so, until it texts START.
   */
  suppressed: Set<string>;
}

type Hold = 'pending' | 'suppressed' | 'projected';

/**
 * The query behind `optOutHolds` (rows of `hold` and `value`), for a caller that sends it inside a
 * statement of its own, and how to read its rows. With `projected`, also the numbers opted out on
 * their conversation (`conversations.opted_out`).
 */
export function optOutHoldsQuery(
  keys: SubjectOf,
  accountId: string,
  phones: readonly string[],
  projected = false,
) {
  const wanted = [...new Set(phones)];
  const phoneOf = new Map(wanted.map((phone) => [subjectOfPhone(keys, accountId, phone), phone]));
  const query = sql<{ hold: Hold; value: string }>`
    select 'pending' as hold, phone as value from opt_out_guards
    where account_id = ${accountId} and phone = any(${wanted}::text[])
    union all
    select 'suppressed', subject from opt_out_suppressions
    where account_id = ${accountId} and subject = any(${[...phoneOf.keys()]}::text[])
    ${
      projected
        ? sql`union all select 'projected', phone from conversations
            where account_id = ${accountId} and phone = any(${wanted}::text[]) and opted_out`
        : sql``
    }`;
  const read = (rows: readonly { hold: Hold; value: string }[]) => {
    const holds = { pending: new Set<string>(), suppressed: new Set<string>(), projected: new Set<string>() };
    for (const { hold, value } of rows) {
      if (hold === 'suppressed') holds.suppressed.add(phoneOf.get(value)!);
      else holds[hold].add(value);
    }
    return holds;
  };
  return { query, read };
}

/**
 * Of `phones`, those with an opt-out decided elsewhere than on their conversation row: pending (see
 * `OptOutHolds`), suppressed past an erasure, and, with `projected`, opted out on the conversation
 * (`conversations.opted_out`). One statement, whatever the number of phones.
 */
async function holdsOf(
  db: Reader,
  keys: SubjectOf,
  accountId: string,
  phones: readonly string[],
  projected: boolean,
): Promise<OptOutHolds & { projected: Set<string> }> {
  const { query, read } = optOutHoldsQuery(keys, accountId, phones, projected);
  if (phones.length === 0) return read([]);
  return read((await query.execute(db)).rows);
}

/**
 * Of `phones`, those held back by an opt-out their conversation row does not show (see
 * `OptOutHolds`), in one query. For a caller that has the conversations loaded already: with
 * `conversations.opted_out` this is what `optedOutPhones` answers, without reading them a second time.
 */
export async function optOutHolds(
  db: Reader,
  keys: SubjectOf,
  accountId: string,
  phones: readonly string[],
): Promise<OptOutHolds> {
  const { pending, suppressed } = await holdsOf(db, keys, accountId, phones, false);
  return { pending, suppressed };
}

/**
 * Of `phones`, those to which nothing but compliance replies may go from this account: the projected
 * opt-out (`conversations.opted_out`), an opt-out answered but not yet decided, or one kept past its
 * person's erasure (see `OptOutHolds`). A send path that has not loaded the conversations asks here
 * right before it sends, so a STOP takes effect the moment it is acknowledged, whatever the
 * projector's lag, and a number re-imported after its erasure stays opted out.
 */
export async function optedOutPhones(
  db: Reader,
  keys: SubjectOf,
  accountId: string,
  phones: readonly string[],
): Promise<Set<string>> {
  const holds = await holdsOf(db, keys, accountId, phones, true);
  return new Set([...holds.pending, ...holds.suppressed, ...holds.projected]);
}
