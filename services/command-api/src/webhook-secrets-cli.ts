import { createSecretBox, loadConfig, newUuid } from '@leadline/runtime';
import { apiConfigSchema } from './config';
import { connectCommandServices } from './services';
import { resealWebhookSecrets } from './webhooks/reseal';

/**
 * `npm run webhook-secrets -- reseal`: after putting a new key first in WEBHOOK_ENCRYPTION_KEYS (and
 * restarting the command API and the relay with it), re-seals every stored webhook secret under it.
 * The old key can then be removed: a rebuild replays each re-seal after the creation it follows, so
 * the old ciphertexts on the log are never opened again.
 */
if (process.argv[2] !== 'reseal') {
  console.error('usage: npm run webhook-secrets -- reseal');
  process.exit(2);
}
const config = loadConfig(apiConfigSchema);
const services = await connectCommandServices(config, 'leadline-webhook-secrets');
try {
  const count = await resealWebhookSecrets({
    ...services,
    secrets: createSecretBox(config.WEBHOOK_ENCRYPTION_KEYS),
    newId: newUuid,
  });
  console.log(`${count} webhook secret(s) re-sealed under the newest key.`);
} finally {
  await services.close();
}
