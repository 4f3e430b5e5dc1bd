import type { CommandBus, Database, NewId, SecretBox } from '@leadline/runtime';
import type { Kysely } from 'kysely';

/**
 * Re-seals every webhook secret not yet under the newest key: one `webhook.secret_resealed` per
 * webhook, decided under the partner's webhook lock against the caught-up partner partition, so a
 * concurrent delete or another run cannot interleave. Safe to run again; returns how many changed.
 */
export async function resealWebhookSecrets(deps: {
  db: Kysely<Database>;
  commands: CommandBus;
  secrets: SecretBox;
  newId: NewId;
}): Promise<number> {
  const { db, commands, secrets, newId } = deps;
  const stale = await db
    .selectFrom('webhooks')
    .select(['id', 'partner_id', 'secret_ciphertext'])
    .orderBy('partner_id')
    .orderBy('id')
    .execute();
  let resealed = 0;
  for (const { id, partner_id: partnerId, secret_ciphertext } of stale) {
    if (secrets.isCurrent(secret_ciphertext)) continue;
    const { events } = await commands.execute({
      stream: { topic: 'partner' },
      context: { partnerId, actor: { kind: 'system', service: 'webhook-secrets' }, correlationId: newId() },
      lockKeys: [`partner:${partnerId}:webhooks`],
      consistency: 'partition',
      async decide(trx) {
        const row = await trx
          .selectFrom('webhooks')
          .select('secret_ciphertext')
          .where('id', '=', id)
          .where('partner_id', '=', partnerId)
          .executeTakeFirst();
        if (!row || secrets.isCurrent(row.secret_ciphertext)) return { events: [], result: undefined };
        const binding = { partnerId, webhookId: id };
        const secret_ciphertext = secrets.seal(secrets.open(row.secret_ciphertext, binding), binding);
        return {
          events: [{ type: 'webhook.secret_resealed', data: { webhook_id: id, secret_ciphertext } }],
          result: undefined,
        };
      },
    });
    resealed += events.length;
  }
  return resealed;
}
