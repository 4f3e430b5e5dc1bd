import { parseArgs } from 'node:util';
import { loadConfig, newUuid } from '@leadline/runtime';
import { apiConfigSchema } from './config';
import { generateApiKey } from './partners/api-keys';
import { createPartner } from './partners/partners';
import { connectCommandServices } from './services';

/** `npm run partner -- create --name NAME`: registers a partner and prints its new key last. */
const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { name: { type: 'string' } },
});
if (positionals[0] !== 'create' || !values.name?.trim()) {
  console.error('usage: npm run partner -- create --name NAME');
  process.exit(2);
}

const config = loadConfig(apiConfigSchema);
const services = await connectCommandServices(config, 'leadline-partner-cli');
try {
  const apiKey = generateApiKey();
  const partnerId = await createPartner({ ...services, newId: newUuid }, values.name.trim(), apiKey);
  console.log(`Partner ${partnerId} created. Its API key is shown once; store it now:`);
  console.log(apiKey);
} finally {
  await services.close();
}
