import { conflict, notFound, type Database, type NewId } from '@leadline/runtime';
import { sql, type Kysely, type Selectable } from 'kysely';
import { displayPrefix, generateApiKey, hashApiKey } from './api-keys';

/** Two, so a partner can roll a new key out before revoking the old one; more is a leak waiting. */
export const MAX_ACTIVE_KEYS = 2;

export type PartnerKeyView = Pick<
  Selectable<Database['partner_api_keys']>,
  'id' | 'created_at' | 'last_used_at' | 'revoked_at'
> & { prefix: string };

/** A partner's keys, oldest first: prefix and dates only, never the secret or its hash. */
export function listPartnerKeys(db: Kysely<Database>, partnerId: string): Promise<PartnerKeyView[]> {
  return db
    .selectFrom('partner_api_keys')
    .select(['id', 'key_prefix as prefix', 'created_at', 'last_used_at', 'revoked_at'])
    .where('partner_id', '=', partnerId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** Issues a key; the plaintext is returned once and stored only as its hash. */
export async function createPartnerKey(
  db: Kysely<Database>,
  newId: NewId,
  partnerId: string,
): Promise<{ id: string; key: string; prefix: string }> {
  return db.transaction().execute(async (trx) => {
    // Serializes key creation per partner, so two concurrent creates cannot exceed the limit.
    await sql`select pg_advisory_xact_lock(hashtextextended(${`partner-keys:${partnerId}`}, 0))`.execute(trx);
    const partner = await trx
      .selectFrom('partners')
      .select('id')
      .where('id', '=', partnerId)
      .executeTakeFirst();
    if (!partner) throw notFound('partner');
    const active = await trx
      .selectFrom('partner_api_keys')
      .select(({ fn }) => fn.countAll<string>().as('count'))
      .where('partner_id', '=', partnerId)
      .where('revoked_at', 'is', null)
      .executeTakeFirstOrThrow();
    if (Number(active.count) >= MAX_ACTIVE_KEYS) {
      throw conflict(
        'too_many_active_keys',
        `A partner holds at most ${MAX_ACTIVE_KEYS} active keys; revoke one before creating another.`,
      );
    }
    const key = generateApiKey();
    const id = newId();
    await trx
      .insertInto('partner_api_keys')
      .values({
        id,
        partner_id: partnerId,
        key_hash: hashApiKey(key),
        key_prefix: displayPrefix(key),
        revoked_at: null,
      })
      .execute();
    return { id, key, prefix: displayPrefix(key) };
  });
}

/**
 * Revokes one of the partner's keys, named by id or by its displayed prefix. Authentication reads the
 * key on every request, so every instance refuses it from the next request on. Revoking twice is fine.
 */
export async function revokePartnerKey(
  db: Kysely<Database>,
  partnerId: string,
  idOrPrefix: string,
  now: Date,
): Promise<PartnerKeyView> {
  const matches = (await listPartnerKeys(db, partnerId)).filter(
    (key) => key.id === idOrPrefix || key.prefix === idOrPrefix,
  );
  if (matches.length === 0) throw notFound('api_key');
  if (matches.length > 1) throw conflict('ambiguous_api_key', 'Several keys match; name the key by its id.');
  const [match] = matches;
  const revoked = await db
    .updateTable('partner_api_keys')
    .set({ revoked_at: sql`coalesce(revoked_at, ${now})` })
    .where('id', '=', match!.id)
    .returning(['id', 'key_prefix as prefix', 'created_at', 'last_used_at', 'revoked_at'])
    .executeTakeFirstOrThrow();
  return revoked;
}
