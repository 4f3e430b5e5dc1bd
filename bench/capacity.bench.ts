import { projections, rebuild } from '@leadline/projector';
import { CPU_GROUPS, cpuWindow } from './cpu';
import { cpuPerThousand, markShown, measure, type Measurement } from './stats';
import { expectStatus, startBenchSystem, type BenchSystem } from './system';

/** Leads imported into one account before its partition is replayed (one `lead.imported` each). */
const REPLAYED_LEADS = Number(process.env.CAPACITY_BENCH_LEADS ?? 12_000);
const BULK = 1_000;
/** Single imports measured over sixteen accounts, from sixteen clients. */
const COMMANDS = Number(process.env.CAPACITY_BENCH_COMMANDS ?? 1_500);
const CLIENTS = 16;

const fmt = (value: number, digits = 0) =>
  value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

async function post(system: BenchSystem, path: string, body: unknown, status: number) {
  const response = await fetch(`${system.baseUrl}/v1${path}`, {
    method: 'POST',
    headers: system.headers,
    body: JSON.stringify(body),
  });
  return expectStatus(response, status) as Promise<Record<string, unknown>>;
}

/**
 * One partition's events applied by one projector: one account's log (its leads imported in bulk)
 * replayed into a fresh schema by `rebuild`, which decodes, opens and applies each event as the live
 * projector does. The window includes the side schema's migration and the consumer group's join, so
 * the rate is a floor; the CPU per event is the figure to plan with.
 */
async function replayOnePartition(system: BenchSystem): Promise<Measurement> {
  const account = (await post(system, '/accounts', { name: 'Capacity replay' }, 201)).id as string;
  for (let first = 0; first < REPLAYED_LEADS; first += BULK) {
    const leads = Array.from({ length: Math.min(BULK, REPLAYED_LEADS - first) }, (_, i) => ({
      phone: `+1512${String(3_000_000 + first + i).padStart(7, '0')}`,
      name: `Replayed ${first + i}`,
    }));
    await post(system, `/accounts/${account}/leads/bulk`, { leads }, 200);
  }
  const cpu = cpuWindow();
  const started = performance.now();
  const { records } = await rebuild({
    ...system.services,
    databaseUrl: system.env.config.DATABASE_URL,
    groupPrefix: `${system.env.config.TOPIC_PREFIX}capacity.`,
    projections,
  });
  const seconds = (performance.now() - started) / 1000;
  return { name: 'projector: one partition replayed', count: records, seconds, samples: [], cpu: cpu.stop() };
}

/** Single imports over sixteen accounts from sixteen clients: the write path whole (API, projector, decider). */
async function singleImports(system: BenchSystem): Promise<Measurement> {
  const accounts: string[] = [];
  for (let i = 0; i < CLIENTS; i++)
    accounts.push((await post(system, '/accounts', { name: `Capacity ${i}` }, 201)).id as string);
  return measure('command API: single import', COMMANDS, CLIENTS, async (index) => {
    const phone = `+1737${String(4_000_000 + index).padStart(7, '0')}`;
    await post(system, `/accounts/${accounts[index % CLIENTS]}/leads`, { phone }, 201);
  });
}

/**
 * What one core carries, for the README's capacity plan: each row's rate on this machine, its CPU
 * seconds per 1,000 operations by process group, and the operations a second that one core's worth of
 * that CPU pays for (1,000 / the total). The total counts every process the operation makes work
 * (Node, Postgres, Kafka, the registry), so "per core" is of the whole deployment, not of one service.
 */
export async function benchCapacity(): Promise<string> {
  const system = await startBenchSystem();
  try {
    const rows = [await replayOnePartition(system), await singleImports(system)];
    const lines = [
      `Capacity per core (${fmt(REPLAYED_LEADS)} leads replayed from one partition; ${fmt(COMMANDS)} single imports from ${CLIENTS} clients over ${CLIENTS} accounts)`,
      '',
      `| row | operations | seconds | ops/s here | ${CPU_GROUPS.map((group) => `${group} s/1k`).join(' | ')} | total s/1k | ops/s per core |`,
      `|---|---:|---:|---:|${CPU_GROUPS.map(() => '---:|').join('')}---:|---:|`,
    ];
    for (const row of rows) {
      markShown(row);
      const cpu = cpuPerThousand(row);
      lines.push(
        `| ${row.name} | ${fmt(row.count)} | ${fmt(row.seconds, 1)} | ${fmt(row.count / row.seconds)} | ` +
          `${CPU_GROUPS.map((group) => fmt(cpu[group], 2)).join(' | ')} | ${fmt(cpu.total, 2)} | ${fmt(1000 / cpu.total)} |`,
      );
    }
    return lines.join('\n');
  } finally {
    await system.close();
  }
}
