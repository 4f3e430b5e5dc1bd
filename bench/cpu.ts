import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU time of every process a benchmark row makes work, read from /proc over the row's measured
 * window: this Node process (load generator, API and in-process consumers) and its children, the
 * Postgres backends of the bench's own databases, and the Kafka and registry JVMs (the registry's
 * Postgres backends with it). The JVMs and their databases are shared with whatever else runs on the
 * machine, so their figures include others' load when it is not quiet.
 */
export const CPU_GROUPS = ['node', 'postgres', 'kafka', 'registry'] as const;
export type CpuGroup = (typeof CPU_GROUPS)[number];
export type CpuSeconds = Record<CpuGroup, number>;

/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these ticks (100 on every mainstream kernel). */
const TICKS_PER_SECOND = 100;
const REGISTRY_DATABASE = 'leadline_registry';

const benchDatabases = new Set<string>();

/** Counts the Postgres backends of `database` in the bench's Postgres figure. */
export function countDatabase(database: string) {
  benchDatabases.add(database);
}

const read = (path: string) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined; // the process ended between listing and reading
  }
};

interface ProcessTicks {
  group: CpuGroup;
  ticks: number;
}

function groupOf(pid: number, ppid: number, commandLine: string, ours: Set<number>): CpuGroup | undefined {
  if (pid === process.pid || ours.has(ppid)) return 'node';
  if (commandLine.includes('-Dleadline.infra.component=kafka')) return 'kafka';
  if (commandLine.includes('-Dleadline.infra.component=schema-registry')) return 'registry';
  // A backend's title: "postgres: 15/main: <user> <database> <client> <state>".
  if (commandLine.startsWith('postgres: ')) {
    const words = commandLine.split(' ');
    if (words.includes(REGISTRY_DATABASE)) return 'registry';
    if (words.some((word) => benchDatabases.has(word))) return 'postgres';
  }
  return undefined;
}

function snapshot(): Map<number, ProcessTicks> {
  const stats: { pid: number; ppid: number; ticks: number; commandLine: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = read(`/proc/${entry}/stat`);
    const commandLine = read(`/proc/${entry}/cmdline`);
    if (!stat || commandLine === undefined) continue;
    // Fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    stats.push({
      pid: Number(entry),
      ppid: Number(fields[1]),
      ticks: Number(fields[11]) + Number(fields[12]),
      commandLine: commandLine.replaceAll('\0', ' ').trim(),
    });
  }
  // Children of this process (and theirs) count as its own: pids in ascending order find most at once.
  const ours = new Set([process.pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const { pid, ppid } of stats)
      if (ours.has(ppid) && !ours.has(pid)) {
        ours.add(pid);
        grew = true;
      }
  }
  const result = new Map<number, ProcessTicks>();
  for (const { pid, ppid, ticks, commandLine } of stats) {
    const group = groupOf(pid, ppid, commandLine, ours);
    if (group) result.set(pid, { group, ticks });
  }
  return result;
}

/** Starts a window; `stop()` returns the CPU seconds each group used in it. */
export function cpuWindow(): { stop(): CpuSeconds } {
  const start = snapshot();
  return {
    stop() {
      const used: CpuSeconds = { node: 0, postgres: 0, kafka: 0, registry: 0 };
      // A process that ended inside the window (a pooled backend closed) is missed; one started in it
      // counts from zero.
      for (const [pid, { group, ticks }] of snapshot())
        used[group] += (ticks - (start.get(pid)?.ticks ?? 0)) / TICKS_PER_SECOND;
      return used;
    },
  };
}

/** The CPU of a row measured in pieces (its setup between them left out): each piece's window, summed. */
export function cpuPieces() {
  const used: CpuSeconds = { node: 0, postgres: 0, kafka: 0, registry: 0 };
  return {
    async around<T>(piece: () => Promise<T>): Promise<T> {
      const window = cpuWindow();
      try {
        return await piece();
      } finally {
        const more = window.stop();
        for (const group of CPU_GROUPS) used[group] += more[group];
      }
    },
    used: () => ({ ...used }),
  };
}

export const cpuTotal = (cpu: CpuSeconds) => CPU_GROUPS.reduce((sum, group) => sum + cpu[group], 0);
