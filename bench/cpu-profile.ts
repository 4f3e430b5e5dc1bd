import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Session } from 'node:inspector/promises';

export interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    hitCount?: number;
  }[];
  startTime: number;
  endTime: number;
  samples?: number[];
}

/**
 * The V8 CPU profile of this process over a window (what `node --cpu-prof` records, started and
 * stopped around it), sampled every 500 µs.
 */
export async function startCpuProfile(): Promise<{ stop(): Promise<CpuProfile> }> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 500 });
  await session.post('Profiler.start');
  return {
    async stop() {
      const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: CpuProfile };
      session.disconnect();
      return profile;
    },
  };
}

/**
 * With `BENCH_CPU_PROFILE_DIR` set, profiles the window of a bench row and writes it there as
 * `<name>.cpuprofile` (open it in Chrome's DevTools or any .cpuprofile viewer); without it, nothing.
 */
export async function profileWindowIfAsked(name: string): Promise<{ stop(): Promise<void> }> {
  const directory = process.env.BENCH_CPU_PROFILE_DIR;
  if (!directory) return { stop: async () => undefined };
  const profile = await startCpuProfile();
  return {
    async stop() {
      const file = join(directory, `${name.replace(/[^A-Za-z0-9]+/g, '-')}.cpuprofile`);
      writeFileSync(file, JSON.stringify(await profile.stop()));
      console.warn(`CPU profile of "${name}": ${file}`);
    },
  };
}
