import { parseArgs } from 'node:util';
import { createDb, DomainError, loadConfig, newUuid } from '@leadline/runtime';
import { apiConfigSchema } from './config';
import { generateApiKey } from './partners/api-keys';
import { createPartnerKey, listPartnerKeys, revokePartnerKey, type PartnerKeyView } from './partners/keys';
import { createPartner } from './partners/partners';
import { connectCommandServices } from './services';

const USAGE = `usage:
  npm run partner -- create --name NAME                  registers a partner; prints its first key last
  npm run partner -- keys list --partner ID              the partner's keys: prefix, creation, last use
  npm run partner -- keys create --partner ID            a second key, to rotate (at most two active)
  npm run partner -- keys revoke --partner ID --key K    K: the key's id or its prefix (llk_xxxxxx)`;

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { name: { type: 'string' }, partner: { type: 'string' }, key: { type: 'string' } },
});
const [command, subcommand] = positionals;
const fail = (message = USAGE): never => {
  console.error(message);
  process.exit(2);
};

const config = loadConfig(apiConfigSchema);
const iso = (date: Date | null) => date?.toISOString() ?? '-';
const describeKey = (key: PartnerKeyView) =>
  [
    key.id,
    key.prefix,
    iso(key.created_at),
    iso(key.last_used_at),
    key.revoked_at ? `revoked ${iso(key.revoked_at)}` : 'active',
  ].join('  ');

if (command === 'create') {
  const name = values.name?.trim() || fail();
  const services = await connectCommandServices(config, 'leadline-partner-cli');
  try {
    const apiKey = generateApiKey();
    const partnerId = await createPartner({ ...services, newId: newUuid }, name, apiKey);
    console.log(`Partner ${partnerId} created. Its API key is shown once; store it now:`);
    console.log(apiKey);
  } finally {
    await services.close();
  }
} else if (command === 'keys') {
  const partnerId = values.partner?.trim() || fail();
  // Keys are operational state in Postgres: no event log needed.
  const db = createDb(config.DATABASE_URL, { maxConnections: 1 });
  try {
    if (subcommand === 'list') {
      console.log('id  prefix  created  last used (to the minute)  status');
      for (const key of await listPartnerKeys(db, partnerId)) console.log(describeKey(key));
    } else if (subcommand === 'create') {
      const created = await createPartnerKey(db, newUuid, partnerId);
      console.log(`Key ${created.id} (${created.prefix}) created. It is shown once; store it now:`);
      console.log(created.key);
    } else if (subcommand === 'revoke') {
      const revoked = await revokePartnerKey(db, partnerId, values.key?.trim() || fail(), new Date());
      console.log(`Revoked: ${describeKey(revoked)}`);
    } else {
      fail();
    }
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    process.exitCode = 1;
    console.error(`${error.code}: ${error.message}`);
  } finally {
    await db.destroy();
  }
} else {
  fail();
}
