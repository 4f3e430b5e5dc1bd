import type { Database } from '@leadline/runtime';
import { sql, type Transaction } from 'kysely';
import { baseSlug, uniqueSlug } from '@leadline/domain';

/**
 * Takes the first free slug for the name among the partner's, for the account, and returns it. The
 * reservation's primary key is the guarantee: a concurrent creation that takes the same candidate
 * first makes this one wait for its transaction, then try the next suffix (or the same slug again if
 * that creation rolled back). Taken in the command's transaction, it is released if the append fails.
 */
export async function reserveSlug(
  trx: Transaction<Database>,
  reservation: { name: string; account_id: string; partner_id: string },
): Promise<string> {
  const base = baseSlug(reservation.name);
  // Only `base` and `base-…` can collide with the candidates; a slug holds no LIKE wildcards.
  const rows = await trx
    .selectFrom('account_slug_reservations')
    .select('slug')
    .where('partner_id', '=', reservation.partner_id)
    .where((eb) => eb.or([eb('slug', '=', base), eb('slug', 'like', sql<string>`${base} || '-%'`)]))
    .execute();
  const taken = new Set(rows.map((row) => row.slug));
  for (;;) {
    const slug = uniqueSlug(reservation.name, taken);
    const reserved = await trx
      .insertInto('account_slug_reservations')
      .values({ partner_id: reservation.partner_id, slug, account_id: reservation.account_id })
      .onConflict((oc) => oc.columns(['partner_id', 'slug']).doNothing())
      .returning('slug')
      .executeTakeFirst();
    if (reserved) return slug;
    taken.add(slug);
  }
}
