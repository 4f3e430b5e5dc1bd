import { benchAccounts } from './accounts.bench';
import { benchAccountCreation } from './account-creation.bench';
import { benchEmbed } from './embed.bench';
import { benchAi } from './ai.bench';
import { benchLeads } from './leads.bench';
import { benchMessaging } from './messaging.bench';
import { benchSequences } from './sequences.bench';
import { benchWebhooks } from './webhooks.bench';

/** `npm run bench`: every scenario, each with its raw baselines measured in the same run. */
const scenarios: Record<string, () => Promise<string>> = {
  accounts: benchAccounts,
  'account-creation': benchAccountCreation,
  embed: benchEmbed,
  ai: benchAi,
  leads: benchLeads,
  messaging: benchMessaging,
  sequences: benchSequences,
  webhooks: benchWebhooks,
};

const only = process.argv.slice(2);
for (const [name, run] of Object.entries(scenarios)) {
  if (only.length > 0 && !only.includes(name)) continue;
  console.log(`\n${await run()}\n`);
}
process.exit(0);
