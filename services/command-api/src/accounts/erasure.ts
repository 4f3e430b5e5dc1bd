import {
  decideAccountErasure,
  type AccountErasureDecision,
  type AccountErasureState,
  type HeldPerson,
} from '@leadline/domain';
import { ERASED_PREFIX, type Database, type PersonalDataKeys } from '@leadline/runtime';
import type { FastifyRequest } from 'fastify';
import { sql, type Transaction } from 'kysely';
import type { AppDeps } from '../app-deps';
import { revokeEmbedTokens } from '../embed/tokens';
import { purgeOperationalRecords } from '../leads/erasure';
import { executeOnAccount, type AccountRow } from './account-stream';

/**
 * The most people one command erases. Each `lead.erased` is a few hundred bytes, far below what one
 * command may append, but the projector applies each with its own statements before the next command
 * decides (within PROJECTION_WAIT_MS): a thousand keep that wait short.
 */
export const ACCOUNT_ERASURE_BATCH = 1_000;
/**
 * At most this many left, the command that finishes erases them: what imports add while a batch is
 * erased is small, so the erasure ends instead of chasing them. Their events name each person by the
 * erased marker, which the projector resolves by hashing the account's phones: fine for a hundred.
 */
export const ACCOUNT_ERASURE_LAST_BATCH = 100;
/** Turns past those the account's size needs: then the erasure finishes with whatever is left. */
const EXTRA_TURNS = 3;

/** The read models that keep rows under a person's phone (the projector's erasure forgets them all). */
const tablesByPhone = ['leads', 'conversations', 'messages', 'consent_records', 'sequence_enrollments'];

/** What the account holds, read under its lock; subjects this request already erased are left out. */
async function accountErasureState(
  trx: Transaction<Database>,
  keys: Pick<PersonalDataKeys, 'subjectOf'>,
  account: AccountRow,
  erasedSubjects: ReadonlySet<string>,
): Promise<AccountErasureState> {
  const accountId = account.id;
  const { rows: phones } = await sql<{ phone: string; lead_id: string | null }>`
    select p.phone, l.id as lead_id
    from (${sql.join(
      tablesByPhone.map(
        (table) => sql`select phone from ${sql.table(table)} where account_id = ${accountId}`,
      ),
      sql` union `,
    )}) p
    left join leads l on l.account_id = ${accountId} and l.phone = p.phone
    order by p.phone`.execute(trx);
  // A row under the erased marker (written while the person's key was already destroyed) names its
  // subject; every other phone is hashed to its subject.
  const people: HeldPerson[] = phones.map(({ phone, lead_id }) => ({
    phone,
    leadId: lead_id,
    subject: phone.startsWith(ERASED_PREFIX)
      ? phone.slice(ERASED_PREFIX.length)
      : keys.subjectOf(accountId, 'lead', phone),
  }));
  const team = await trx
    .selectFrom('team_members')
    .select('id')
    .where('account_id', '=', accountId)
    .execute();
  const teamSubjects = new Set(team.map((member) => keys.subjectOf(accountId, 'team_member', member.id)));
  const live = await trx
    .selectFrom('personal_data_keys')
    .select('subject')
    .distinct()
    .where('account_id', '=', accountId)
    .where('erased_at', 'is', null)
    .execute();
  const named = new Set(people.map((person) => person.subject));
  return {
    status: account.status,
    erasedAt: account.erased_at,
    leadsErased: account.leads_erased,
    people,
    // A live key no row names is a lead's, known to the log only (the rows went with a deletion, or
    // were never projected): unless it is a team member's, or was erased earlier in this request (its
    // key is destroyed only at the end).
    keyOnlySubjects: live
      .map((row) => row.subject)
      .filter((subject) => !named.has(subject) && !teamSubjects.has(subject) && !erasedSubjects.has(subject))
      .sort(),
    holdsOtherPersonalData: team.length > 0 || live.length > 0,
  };
}

export interface AccountErasure {
  erasedAt: Date;
  leadsErased: number;
}

/**
 * Erases an account: deactivates it and erases every person it holds, a `lead.erased` each, in
 * batches (each command under the account's lock, decided on read models caught up with the one
 * before). The command that finds few enough left erases them, appends `account.erased` and destroys
 * every key of the account in its own transaction: the keys go only once the events are on the log,
 * and no import into the account is decided between its look and the keys going.
 */
export async function eraseAccount(
  deps: Pick<AppDeps, 'commands' | 'db' | 'clock' | 'personalDataKeys'>,
  request: FastifyRequest,
  accountId: string,
): Promise<AccountErasure> {
  const { commands, db, clock, personalDataKeys: keys } = deps;
  const erasedSubjects = new Set<string>();
  let deactivated = false;
  let turnsLeft: number | undefined;
  for (;;) {
    const { result } = await executeOnAccount<AccountErasureDecision>(
      commands,
      request,
      accountId,
      async (trx, account) => {
        const state = await accountErasureState(trx, keys, account, erasedSubjects);
        turnsLeft ??=
          Math.ceil((state.people.length + state.keyOnlySubjects.length) / ACCOUNT_ERASURE_BATCH) +
          EXTRA_TURNS;
        const decision = decideAccountErasure(state, {
          now: clock.now(),
          batchSize: ACCOUNT_ERASURE_BATCH,
          lastBatch: ACCOUNT_ERASURE_LAST_BATCH,
          erasedNow: erasedSubjects.size,
          finish: --turnsLeft <= 0,
        });
        if (decision.action === 'finish') await keys.eraseAccount(accountId, decision.erasedAt, trx);
        return { events: decision.events, result: decision };
      },
      // Erasing again erases what reached it since, and answers as the first time.
      { onErased: 'proceed' },
    );
    if (!deactivated && result.events.some((event) => event.type === 'account.deactivated')) {
      // As a deactivation does: the account's embedded dashboards stop at once.
      await revokeEmbedTokens(db, accountId, clock.now());
      deactivated = true;
    }
    if (result.action === 'already_erased') {
      return { erasedAt: result.erasedAt, leadsErased: result.leadsErased };
    }
    for (const subject of result.subjects) erasedSubjects.add(subject);
    await purgeOperationalRecords(db, request.partner.id, [...result.phones, ...result.leadIds]);
    if (result.action === 'erase') continue;
    // A key this process read again while the last command ran is forgotten (the keys are destroyed).
    await keys.eraseAccount(accountId, result.erasedAt);
    // The names of the dashboard users the account's embed tokens were issued to (kept for the audit
    // of who held one; the tokens themselves are revoked).
    await db
      .updateTable('embed_tokens')
      .set({ user_name: null })
      .where('account_id', '=', accountId)
      .execute();
    return { erasedAt: result.erasedAt, leadsErased: result.leadsErased };
  }
}
