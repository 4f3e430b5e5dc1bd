import { CPU_GROUPS, cpuPieces, cpuTotal, cpuWindow, type CpuSeconds } from './cpu';

/** Latency samples in milliseconds, and the figures the bench tables report. */
export interface Measurement {
  name: string;
  count: number;
  seconds: number;
  samples: number[];
  /** CPU seconds each group of processes used over the measured window (see cpu.ts). */
  cpu?: CpuSeconds;
}

export function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export const throughput = (m: Measurement) => m.count / m.seconds;

/**
 * Runs `task(i)` for i in [from, to) with `concurrency` workers, pushing each call's milliseconds to
 * `samples`; returns the seconds the whole range took.
 */
async function timedCalls(
  from: number,
  to: number,
  concurrency: number,
  task: (index: number) => Promise<void>,
  samples: number[],
): Promise<number> {
  let next = from;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let index = next++; index < to; index = next++) {
        const t0 = performance.now();
        await task(index);
        samples.push(performance.now() - t0);
      }
    }),
  );
  return (performance.now() - started) / 1000;
}

/** Runs `task(i)` for i in [0, count) with `concurrency` workers, timing each call. */
export async function measure(
  name: string,
  count: number,
  concurrency: number,
  task: (index: number) => Promise<void>,
): Promise<Measurement> {
  const samples: number[] = [];
  const cpu = cpuWindow();
  const seconds = await timedCalls(0, count, concurrency, task, samples);
  return remember({ name, count, seconds, samples, cpu: cpu.stop() });
}

/**
 * Measures rows against each other in turns: `count` calls of each, in `slices` rounds of
 * count/slices calls per row (the order rotating every round), so that a row and its floor see the
 * same load on a shared machine instead of whatever ran during their own seconds. Each row's figures
 * (latencies, seconds, CPU) are the sums over its turns.
 */
export async function measureInTurns(
  rows: { name: string; task: (index: number) => Promise<void> }[],
  count: number,
  concurrency: number,
  slices = 10,
): Promise<Measurement[]> {
  const totals = rows.map(({ name, task }) => ({
    name,
    task,
    seconds: 0,
    samples: [] as number[],
    cpu: cpuPieces(),
  }));
  for (let slice = 0; slice < slices; slice++) {
    const [from, to] = [Math.floor((slice * count) / slices), Math.floor(((slice + 1) * count) / slices)];
    for (let turn = 0; turn < rows.length; turn++) {
      const total = totals[(slice + turn) % rows.length]!;
      total.seconds += await total.cpu.around(() =>
        timedCalls(from, to, concurrency, total.task, total.samples),
      );
    }
  }
  return totals.map(({ name, seconds, samples, cpu }) =>
    remember({ name, count, seconds, samples, cpu: cpu.used() }),
  );
}

const remember = (measurement: Measurement) => {
  measured.push(measurement);
  return measurement;
};

const fmt = (value: number, digits = 1) => value.toFixed(digits);

/** A markdown table: each measurement beside its baseline, with the ratios. */
export function comparisonTable(rows: { subject: Measurement; baseline: Measurement }[]): string {
  const lines = [
    '| scenario | ops/s | p50 ms | p99 ms | baseline | baseline ops/s | baseline p50 ms | baseline p99 ms | p50 ratio | throughput ratio |',
    '|---|---:|---:|---:|---|---:|---:|---:|---:|---:|',
  ];
  for (const { subject, baseline } of rows) {
    const [s50, s99, b50, b99] = [
      percentile(subject.samples, 50),
      percentile(subject.samples, 99),
      percentile(baseline.samples, 50),
      percentile(baseline.samples, 99),
    ];
    lines.push(
      `| ${subject.name} | ${fmt(throughput(subject), 0)} | ${fmt(s50, 2)} | ${fmt(s99, 2)} | ${baseline.name} | ` +
        `${fmt(throughput(baseline), 0)} | ${fmt(b50, 2)} | ${fmt(b99, 2)} | ${fmt(s50 / b50)}x | ` +
        `${fmt(throughput(baseline) / throughput(subject))}x slower |`,
    );
  }
  return [lines.join('\n'), '', cpuTable(rows)].join('\n');
}

/** Every measurement taken, and those a CPU table has shown (run.ts prints the rest). */
const measured: Measurement[] = [];
const inCpuTable = new Set<Measurement>();

/** The CPU of the measurements no table has shown yet (rows without a floor, or custom tables). */
export function unshownCpuTable(): string | undefined {
  const rest = measured.filter((measurement) => !inCpuTable.has(measurement));
  if (rest.length === 0) return undefined;
  const lines = [
    'CPU seconds per 1,000 operations of the other rows (no floor of their own; see cpuTable)',
    '',
    `| row | ${CPU_GROUPS.join(' | ')} | total |`,
    `|---|${CPU_GROUPS.map(() => '---:|').join('')}---:|`,
  ];
  for (const measurement of rest) {
    inCpuTable.add(measurement);
    lines.push(`| ${measurement.name} | ${cpuCells(measurement)} |`);
  }
  return lines.join('\n');
}

/** For a scenario that prints a measurement's CPU in a table of its own. */
export function markShown(measurement: Measurement) {
  inCpuTable.add(measurement);
}

/**
 * A row's CPU cells: per 1,000 operations, each group and the total; a dash for a row measured
 * without a CPU window (a zero there would read as free).
 */
function cpuCells(measurement: Measurement): string {
  if (!measurement.cpu) return [...CPU_GROUPS, 'total'].map(() => '—').join(' | ');
  const cpu = cpuPerThousand(measurement);
  return `${CPU_GROUPS.map((group) => fmt(cpu[group], 2)).join(' | ')} | ${fmt(cpu.total, 2)}`;
}

/** CPU seconds per 1,000 operations of a measurement: each group, and in total. */
export function cpuPerThousand(measurement: Measurement): CpuSeconds & { total: number } {
  const cpu = measurement.cpu ?? { node: 0, postgres: 0, kafka: 0, registry: 0 };
  const per = (seconds: number) => (seconds * 1000) / measurement.count;
  return {
    node: per(cpu.node),
    postgres: per(cpu.postgres),
    kafka: per(cpu.kafka),
    registry: per(cpu.registry),
    total: per(cpuTotal(cpu)),
  };
}

/**
 * CPU seconds per 1,000 operations of every measurement of `rows`, each once, and each subject's total
 * against its baseline's (the floor): what a scaled-out deployment pays per operation, beside latency.
 */
export function cpuTable(rows: { subject: Measurement; baseline: Measurement }[]): string {
  const lines = [
    "CPU seconds per 1,000 operations over the measured window (/proc: node = this process, with load generator; postgres = the bench database's backends; kafka, registry = the shared JVMs)",
    '',
    `| row | ${CPU_GROUPS.join(' | ')} | total | total vs floor |`,
    `|---|${CPU_GROUPS.map(() => '---:|').join('')}---:|---|`,
  ];
  const seen = new Set<Measurement>();
  const line = (measurement: Measurement, versus: string) => {
    inCpuTable.add(measurement);
    lines.push(`| ${measurement.name} | ${cpuCells(measurement)} | ${versus} |`);
  };
  for (const { subject, baseline } of rows) {
    const ratio =
      subject.cpu && baseline.cpu
        ? `${fmt(cpuPerThousand(subject).total / cpuPerThousand(baseline).total)}x`
        : '—';
    if (!seen.has(subject)) line(subject, '');
    seen.add(subject);
    lines.push(`| ↳ vs ${baseline.name} | | | | | | ${ratio} |`);
  }
  for (const { baseline } of rows) {
    if (seen.has(baseline)) continue;
    seen.add(baseline);
    line(baseline, 'floor');
  }
  return lines.join('\n');
}

/**
 * Starts `task(i)` for i in [0, count) at a steady `perSecond` (open loop: a slow answer does not
 * delay the next arrival), timing each call from its scheduled start.
 */
export async function measureAtRate(
  name: string,
  count: number,
  perSecond: number,
  task: (index: number) => Promise<void>,
): Promise<Measurement> {
  const samples: number[] = [];
  const cpu = cpuWindow();
  const started = performance.now();
  const runs: Promise<void>[] = [];
  for (let index = 0; index < count; index++) {
    const due = started + (index * 1000) / perSecond;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    runs.push(task(index).then(() => void samples.push(performance.now() - due)));
  }
  await Promise.all(runs);
  const seconds = (performance.now() - started) / 1000;
  return remember({ name, count, seconds, samples, cpu: cpu.stop() });
}
