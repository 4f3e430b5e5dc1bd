/** Latency samples in milliseconds, and the figures the bench tables report. */
export interface Measurement {
  name: string;
  count: number;
  seconds: number;
  samples: number[];
}

export function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export const throughput = (m: Measurement) => m.count / m.seconds;

/** Runs `task(i)` for i in [0, count) with `concurrency` workers, timing each call. */
export async function measure(
  name: string,
  count: number,
  concurrency: number,
  task: (index: number) => Promise<void>,
): Promise<Measurement> {
  const samples: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let index = next++; index < count; index = next++) {
        const t0 = performance.now();
        await task(index);
        samples.push(performance.now() - t0);
      }
    }),
  );
  return { name, count, seconds: (performance.now() - started) / 1000, samples };
}

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
  const started = performance.now();
  const runs: Promise<void>[] = [];
  for (let index = 0; index < count; index++) {
    const due = started + (index * 1000) / perSecond;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    runs.push(task(index).then(() => void samples.push(performance.now() - due)));
  }
  await Promise.all(runs);
  return { name, count, seconds: (performance.now() - started) / 1000, samples };
}
