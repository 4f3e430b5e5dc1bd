import { commandStageSeconds } from '@leadline/runtime';

const STAGES = ['lock', 'offsets', 'catch_up', 'decide', 'append', 'read_your_writes'];

/**
 * Where the milliseconds of a command go: the runtime times each stage of the decide-and-append path
 * (`timeStage`); this resets those timers, runs `work`, and prints each stage's mean per command and
 * its share of the staged total (HTTP, JSON and the transaction's own statements are outside it).
 */
export async function stageBreakdown(label: string, work: () => Promise<unknown>): Promise<string> {
  commandStageSeconds.reset();
  await work();
  const { values } = await commandStageSeconds.get();
  const of = (stage: string, suffix: string) =>
    values.find(
      (value) =>
        value.labels.stage === stage && value.metricName?.endsWith(suffix) && !('le' in value.labels),
    )?.value ?? 0;
  const rows = STAGES.map((stage) => ({
    stage,
    sum: of(stage, '_sum'),
    count: of(stage, '_count'),
  }));
  const commands = Math.max(...rows.map((row) => row.count), 1);
  const total = rows.reduce((sum, row) => sum + row.sum, 0) || 1;
  return [
    `Stages of ${label} (mean ms per command, share of the staged time)`,
    '',
    '| stage | mean ms | share |',
    '|---|---:|---:|',
    ...rows.map(
      (row) =>
        `| ${row.stage} | ${((row.sum / commands) * 1000).toFixed(1)} | ${((row.sum / total) * 100).toFixed(0)}% |`,
    ),
    `| total | ${((total / commands) * 1000).toFixed(1)} | 100% |`,
  ].join('\n');
}
