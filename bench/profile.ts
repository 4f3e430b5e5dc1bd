import { writeFileSync } from 'node:fs';
import { cpuWindow } from './cpu';
import { startCpuProfile, type CpuProfile } from './cpu-profile';
import { countStatements, statementTotal } from './statements';
import { cpuPerThousand } from './stats';
import { expectStatus, partnerHeaders, startBenchSystem } from './system';

/**
 * `npx tsx bench/profile.ts [import|get|create|bulk] [operations] [profile.cpuprofile]`: where one
 * operation's cost goes. Single lead imports (or account GETs) from 16 clients over 16 accounts, account
 * creations from 16 clients (one partner each, as in the account-creation bench), or bulk imports of
 * 1,000 new leads one after another, each into a fresh account, until listed (the API, projector and
 * inbound decider in this process, as in `npm run bench`), after a warm-up; over the measured operations only: the V8 CPU profile (what
 * `node --cpu-prof` records, started and stopped around the window), its top functions and packages by
 * self time, every SQL statement sent by any `pg` client (pg_stat_statements is not loaded on the
 * development server, so `Client.query` is counted), and CPU seconds per 1,000 imports from /proc.
 */
const MODE = (['get', 'bulk', 'create'] as const).find((mode) => mode === process.argv[2]) ?? 'import';
const IMPORTS = Number(process.argv[3] ?? (MODE === 'bulk' ? 10 : 1000));
const OUTPUT = process.argv[4];
// A bulk import is one request of 1,000 leads: the bench row sends them one at a time.
const CONCURRENCY = MODE === 'bulk' ? 1 : 16;
const BULK_SIZE = 1000;

type ProfileNode = CpuProfile['nodes'][number];

const system = await startBenchSystem();
const { baseUrl, headers } = system;
const post = async (path: string, body: unknown, status: number) =>
  expectStatus(
    await fetch(`${baseUrl}${path}`, { method: 'POST', headers, body: JSON.stringify(body) }),
    status,
  );
const accounts: string[] = [];
// Bulk: a fresh account per import (so every lead is new), made before the measured window; creations
// need none.
const accountCount = { bulk: IMPORTS + 2, create: 0, get: CONCURRENCY, import: CONCURRENCY }[MODE];
for (let i = 0; i < accountCount; i++)
  accounts.push(((await post('/v1/accounts', { name: `Profile ${i}` }, 201)) as { id: string }).id);

// Create: a partner per client, as the account-creation bench has.
const partners = MODE === 'create' ? await partnerHeaders(system, CONCURRENCY) : [headers];

let phone = 0;
let bulkImports = 0;
const operation = async (i: number) => {
  const account = accounts[i % CONCURRENCY];
  if (MODE === 'bulk') {
    const fresh = accounts[bulkImports++]!;
    const leads = Array.from({ length: BULK_SIZE }, (_, j) => ({
      phone: `+1${2000000000 + ++phone}`,
      name: `Lead ${j}`,
      email: `lead${j}@example.com`,
      source: 'application',
    }));
    await post(`/v1/accounts/${fresh}/leads/bulk`, { leads }, 200);
    const listed = (await expectStatus(
      await fetch(`${baseUrl}/v1/accounts/${fresh}/leads?limit=1`, { headers }),
      200,
    )) as { total: number };
    if (listed.total !== BULK_SIZE) throw new Error('bulk import lost leads');
  } else if (MODE === 'get')
    await expectStatus(await fetch(`${baseUrl}/v1/accounts/${account}`, { headers }), 200);
  else if (MODE === 'create')
    await expectStatus(
      await fetch(`${baseUrl}/v1/accounts`, {
        method: 'POST',
        headers: partners[i % CONCURRENCY]!,
        body: JSON.stringify({ name: `Profile account ${i}`, metadata: { i } }),
      }),
      201,
    );
  else
    await post(
      `/v1/accounts/${account}/leads`,
      { phone: `+1${2000000000 + ++phone}`, name: `Lead ${phone}` },
      201,
    );
};
async function imports(count: number) {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < count; i = next++) await operation(i);
    }),
  );
}
await imports(MODE === 'bulk' ? 2 : 200);

const profiling = await startCpuProfile();
const cpu = cpuWindow();
const counted = countStatements();
const started = performance.now();
await imports(IMPORTS);
const seconds = (performance.now() - started) / 1000;
const statements = counted.stop();
const used = cpu.stop();
const profile = await profiling.stop();
await system.close();
if (OUTPUT) writeFileSync(OUTPUT, JSON.stringify(profile));

/** What a frame belongs to: a package, a module of ours, Node's own code, or V8's bookkeeping. */
function ownerOf({ url, functionName }: ProfileNode['callFrame']): string {
  if (!url) return functionName.startsWith('(') ? functionName : `(native) ${functionName}`;
  const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url.slice(url.lastIndexOf('node_modules/')));
  if (url.includes('node_modules/') && inPackage) return inPackage[1]!;
  if (url.startsWith('node:')) return url;
  const ours = /\/((?:packages|services|apps|bench)\/[^/]+)\//.exec(url);
  return ours ? ours[1]! : url;
}

const totalHits = profile.nodes.reduce((sum, node) => sum + (node.hitCount ?? 0), 0) || 1;
const busyHits = profile.nodes
  .filter((node) => node.callFrame.functionName !== '(idle)')
  .reduce((sum, node) => sum + (node.hitCount ?? 0), 0);
const tally = (key: (node: ProfileNode) => string) => {
  const sums = new Map<string, number>();
  for (const node of profile.nodes)
    if (node.hitCount && node.callFrame.functionName !== '(idle)')
      sums.set(key(node), (sums.get(key(node)) ?? 0) + node.hitCount);
  return [...sums].sort((a, b) => b[1] - a[1]);
};
const share = (hits: number) => `${((hits / busyHits) * 100).toFixed(1)}%`;
const perImport = (count: number) => (count / IMPORTS).toFixed(2);
const WHAT = {
  bulk: `Bulk imports of ${BULK_SIZE} leads, one client over ${IMPORTS} accounts`,
  get: `Account GETs, ${CONCURRENCY} clients over ${CONCURRENCY} accounts`,
  create: `Account creations, ${CONCURRENCY} clients of as many partners`,
  import: `Single lead imports, ${CONCURRENCY} clients over ${CONCURRENCY} accounts`,
}[MODE];
const cpuPer = cpuPerThousand({ name: 'profile', count: IMPORTS, seconds, samples: [], cpu: used });

console.log(
  [
    `${WHAT}: ${IMPORTS} in ${seconds.toFixed(1)} s (${(IMPORTS / seconds).toFixed(0)}/s)`,
    '',
    `CPU seconds per 1,000 operations: node ${cpuPer.node.toFixed(2)}, postgres ${cpuPer.postgres.toFixed(2)}, kafka ${cpuPer.kafka.toFixed(2)}, registry ${cpuPer.registry.toFixed(2)}; total ${cpuPer.total.toFixed(2)}`,
    `This process was busy in ${((busyHits / totalHits) * 100).toFixed(0)}% of the profile's samples.`,
    '',
    `SQL statements per operation: ${perImport(statementTotal(statements))}`,
    '',
    '| per operation | statement |',
    '|---:|---|',
    ...[...statements]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 20)
      .map(([text, count]) => `| ${perImport(count)} | \`${text.slice(0, 140).replaceAll('|', '\\|')}\` |`),
    '',
    'Self time by owner (share of busy samples)',
    '',
    '| owner | share |',
    '|---|---:|',
    ...tally((node) => ownerOf(node.callFrame))
      .slice(0, 20)
      .map(([owner, hits]) => `| ${owner} | ${share(hits)} |`),
    '',
    'Self time by function',
    '',
    '| function | owner | share |',
    '|---|---|---:|',
    ...tally(
      (node) =>
        `${node.callFrame.functionName || '(anonymous)'}\u0000${ownerOf(node.callFrame)}:${node.callFrame.lineNumber + 1}`,
    )
      .slice(0, 25)
      .map(([key, hits]) => {
        const [name, where] = key.split('\u0000');
        return `| ${name} | ${where} | ${share(hits)} |`;
      }),
  ].join('\n'),
);
process.exit(0);
