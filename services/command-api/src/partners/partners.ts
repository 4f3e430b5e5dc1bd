import type { CommandBus, Database, NewId } from '@leadline/runtime';
import type { Kysely } from 'kysely';
import { displayPrefix, hashApiKey } from './api-keys';

export interface PartnerDeps {
  db: Kysely<Database>;
  commands: CommandBus;
  newId: NewId;
}

/**
 * Registers a partner: `partner.created` on the log, then its key's hash in the credentials table
 * (credentials stay off the log, which analytics teams replay).
 */
export async function createPartner(deps: PartnerDeps, name: string, apiKey: string): Promise<string> {
  const partnerId = deps.newId();
  await deps.commands.append({
    stream: { topic: 'partner' },
    context: {
      partnerId,
      actor: { kind: 'system', service: 'partner-admin' },
      correlationId: deps.newId(),
    },
    events: [{ type: 'partner.created', data: { name } }],
  });
  await deps.db
    .insertInto('partner_api_keys')
    .values({
      id: deps.newId(),
      partner_id: partnerId,
      key_hash: hashApiKey(apiKey),
      key_prefix: displayPrefix(apiKey),
      revoked_at: null,
    })
    .execute();
  return partnerId;
}

/** The local development partner, whose key comes from PARTNER_API_KEY; created once. */
export async function ensurePartnerWithKey(deps: PartnerDeps, name: string, apiKey: string): Promise<void> {
  const existing = await deps.db
    .selectFrom('partner_api_keys')
    .select('partner_id')
    .where('key_hash', '=', hashApiKey(apiKey))
    .executeTakeFirst();
  if (!existing) await createPartner(deps, name, apiKey);
}
