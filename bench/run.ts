import { benchAccounts } from './accounts.bench';
import { benchAccountCreation } from './account-creation.bench';
import { benchCapacity } from './capacity.bench';
import { benchEmbed } from './embed.bench';
import { benchAi } from './ai.bench';
import { benchLeads } from './leads.bench';
import { benchMessaging } from './messaging.bench';
import { benchMixed } from './mixed.bench';
import { benchPacing } from './pacing.bench';
import { benchSealing } from './sealing.bench';
import { benchSequences } from './sequences.bench';
import { unshownCpuTable } from './stats';
import { benchWebhooks } from './webhooks.bench';

/**
 * `npm run bench [scenario[:row]…]`: every scenario, each with its raw baselines measured in the same
 * run, and the CPU seconds per 1,000 operations of every row (bench/cpu.ts); `messaging:gateway` runs
 * only that row of a scenario (the machine is shared, rows take minutes).
 */
const scenarios: Record<string, (rows: string[]) => Promise<string>> = {
  accounts: benchAccounts,
  'account-creation': benchAccountCreation,
  capacity: benchCapacity,
  embed: benchEmbed,
  ai: benchAi,
  leads: benchLeads,
  messaging: benchMessaging,
  mixed: benchMixed,
  pacing: benchPacing,
  sealing: benchSealing,
  sequences: benchSequences,
  webhooks: benchWebhooks,
};

const only = process.argv.slice(2);
for (const [name, run] of Object.entries(scenarios)) {
  const picked = only.filter((arg) => arg === name || arg.startsWith(`${name}:`));
  if (only.length > 0 && picked.length === 0) continue;
  const rows = picked.includes(name) ? [] : picked.map((arg) => arg.slice(name.length + 1));
  console.log(`\n${await run(rows)}\n`);
  // Every row's CPU per operation is printed: beside its floor in the scenario's tables, or here.
  const cpu = unshownCpuTable();
  if (cpu) console.log(`${cpu}\n`);
}
process.exit(0);
