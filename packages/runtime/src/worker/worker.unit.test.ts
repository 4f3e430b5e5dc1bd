import { fakeClock } from '@leadline/test-kit';
import { describe, expect, it } from 'vitest';
import type { RetryPolicy } from './retry';
import { WorkAborted, type Settlement, type WorkQueue } from './work-queue';
import { createWorker } from './worker';

interface Job {
  id: string;
  key: string;
}

/**
 * An in-memory leased queue: the worker's loop is what is tested here, against the same contract the
 * Postgres queues keep (a claim leases, a release hands back, a settlement is stored).
 */
function memoryQueue(clock: ReturnType<typeof fakeClock>, jobs: Job[], leaseMs = 60_000) {
  const leases = new Map<string, number>();
  const log: string[] = [];
  const settlements = new Map<string, Settlement<string>>();
  const releases: { id: string; until: Date | undefined }[] = [];
  const signals = new Map<string, AbortSignal>();
  const handlers = new Map<string, (job: Job, signal: AbortSignal) => Promise<string>>();
  const started = new Map<string, () => void>();
  const startedPromise = new Map<string, Promise<void>>();
  for (const job of jobs) startedPromise.set(job.id, new Promise((resolve) => started.set(job.id, resolve)));
  const queue: WorkQueue<Job, string> = {
    name: 'memory',
    async claim({ limit }) {
      const now = clock.now().getTime();
      const due = jobs.filter((job) => !settlements.has(job.id) && (leases.get(job.id) ?? 0) <= now);
      const claimed = due.slice(0, limit);
      for (const job of claimed) leases.set(job.id, now + leaseMs);
      return claimed;
    },
    async run(job, signal) {
      log.push(`start ${job.id}`);
      signals.set(job.id, signal);
      started.get(job.id)!();
      const result = await (handlers.get(job.id) ?? (async () => 'ok'))(job, signal);
      log.push(`end ${job.id}`);
      return result;
    },
    async settle(job, settlement) {
      settlements.set(job.id, settlement);
      leases.delete(job.id);
    },
    async release(items, until) {
      for (const job of items) {
        releases.push({ id: job.id, until });
        leases.set(job.id, until?.getTime() ?? 0);
      }
    },
    leaseEndOf: (job) => new Date(leases.get(job.id) ?? 0),
  };
  return {
    queue,
    log,
    settlements,
    releases,
    signals,
    handlers,
    started: (id: string) => startedPromise.get(id)!,
  };
}

const policy: RetryPolicy = {
  backoff: { kind: 'exponential', baseMs: 1000, maxMs: 30_000 },
  jitter: 'full',
  maxAttempts: Number.POSITIVE_INFINITY,
  retryable: 'all',
};
const never = () => new Promise<string>(() => undefined);

describe('the worker loop', () => {
  it("frees the slot of an item past its time budget: it is handed back and another key's item runs", async () => {
    const clock = fakeClock();
    const memory = memoryQueue(clock, [
      { id: 'stuck', key: 'tenant-a' },
      { id: 'other', key: 'tenant-b' },
    ]);
    memory.handlers.set('stuck', never);
    const worker = createWorker({
      queue: memory.queue,
      clock,
      timers: clock,
      concurrency: 1,
      prefetch: 1,
      fairness: { keyOf: (job) => job.key, perKey: 1 },
      retry: policy,
      budgetMs: 10_000,
      random: () => 0.5,
    });
    const draining = worker.drain();
    await memory.started('stuck');
    // One slot, held by the item that never ends: nothing else runs until its budget passes.
    expect(memory.log).toEqual(['start stuck']);
    clock.advance(9999);
    expect(memory.signals.get('stuck')!.aborted).toBe(false);
    clock.advance(1);
    expect(await draining).toBe(1);
    expect(memory.log).toEqual(['start stuck', 'start other', 'end other']);
    expect(memory.settlements.get('other')).toEqual({ kind: 'done', result: 'ok' });
    // The stuck one was aborted and handed back after its retry delay (half the first backoff here).
    const signal = memory.signals.get('stuck')!;
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(WorkAborted);
    expect(memory.releases).toEqual([{ id: 'stuck', until: new Date(clock.now().getTime() + 500) }]);
    expect(memory.settlements.has('stuck')).toBe(false);
  });

  it('on stop, stops claiming, waits a bounded time for items under way, then hands them back released', async () => {
    const clock = fakeClock();
    const memory = memoryQueue(clock, [
      { id: 'hanging', key: 'a' },
      { id: 'quick', key: 'b' },
      { id: 'waiting', key: 'a' },
    ]);
    memory.handlers.set('hanging', never);
    let finishQuick!: (result: string) => void;
    memory.handlers.set('quick', () => new Promise((resolve) => (finishQuick = resolve)));
    const worker = createWorker({
      queue: memory.queue,
      clock,
      timers: clock,
      concurrency: 2,
      prefetch: 2,
      fairness: { keyOf: (job) => job.key, perKey: 1 },
      retry: policy,
      budgetMs: 60_000,
      drainMs: 5000,
    });
    worker.start();
    await memory.started('hanging');
    await memory.started('quick');
    const stopped = worker.stop();
    let done = false;
    void stopped.then(() => (done = true));
    // The item that waited behind its key's running one goes back at once.
    await eventuallySync(() => memory.releases.some((release) => release.id === 'waiting'));
    // An item that ends within the bound is settled as usual.
    finishQuick('ok');
    await eventuallySync(() => memory.settlements.has('quick'));
    expect(done).toBe(false);
    clock.advance(5000);
    await stopped;
    expect(memory.signals.get('hanging')!.aborted).toBe(true);
    expect(memory.releases).toEqual([
      { id: 'waiting', until: undefined },
      { id: 'hanging', until: undefined },
    ]);
    expect(memory.settlements.get('quick')).toEqual({ kind: 'done', result: 'ok' });
    expect(memory.log).not.toContain('start waiting');
  });

  it('says how many slots are free, so an item may wait for its next step only while another could start', async () => {
    const clock = fakeClock();
    const memory = memoryQueue(clock, [
      { id: 'one', key: 'a' },
      { id: 'two', key: 'b' },
    ]);
    let finishOne!: (result: string) => void;
    let finishTwo!: (result: string) => void;
    memory.handlers.set('one', () => new Promise((resolve) => (finishOne = resolve)));
    memory.handlers.set('two', () => new Promise((resolve) => (finishTwo = resolve)));
    const worker = createWorker({
      queue: memory.queue,
      clock,
      timers: clock,
      concurrency: 3,
      retry: policy,
      budgetMs: 60_000,
    });
    expect(worker.freeSlots()).toBe(3);
    worker.start();
    await memory.started('one');
    await memory.started('two');
    expect(worker.freeSlots()).toBe(1);
    finishOne('ok');
    await eventuallySync(() => worker.freeSlots() === 2);
    const stopped = worker.stop();
    // A stopping worker starts nothing more.
    expect(worker.freeSlots()).toBe(0);
    finishTwo('ok');
    await stopped;
  });

  it('settles a failure by the retry policy: retried with jitter, then given up', async () => {
    const clock = fakeClock();
    const memory = memoryQueue(clock, [{ id: 'flaky', key: 'a' }]);
    memory.handlers.set('flaky', async () => {
      throw new Error('provider down');
    });
    const worker = createWorker({
      queue: { ...memory.queue, history: () => ({ retriesDone: 1 }) },
      clock,
      timers: clock,
      concurrency: 1,
      retry: { ...policy, maxAttempts: 3 },
      budgetMs: 10_000,
      random: () => 0.25,
    });
    await worker.drain();
    expect(memory.settlements.get('flaky')).toEqual({
      kind: 'retry',
      at: new Date(clock.now().getTime() + 500),
      error: new Error('provider down'),
      result: undefined,
    });

    const last = memoryQueue(clock, [{ id: 'flaky', key: 'a' }]);
    last.handlers.set('flaky', async () => 'HTTP 500');
    const judged = createWorker({
      queue: {
        ...last.queue,
        history: () => ({ retriesDone: 2 }),
        failureOf: (result) => (result === 'ok' ? undefined : { error: result }),
      },
      clock,
      timers: clock,
      concurrency: 1,
      retry: { ...policy, maxAttempts: 3 },
      budgetMs: 10_000,
    });
    await judged.drain();
    expect(last.settlements.get('flaky')).toEqual({
      kind: 'exhausted',
      error: 'HTTP 500',
      result: 'HTTP 500',
    });
  });

  it('runs the items of one key one at a time, in order, beside other keys', async () => {
    const clock = fakeClock();
    const jobs = ['a1', 'a2', 'a3', 'b1', 'b2'].map((id) => ({ id, key: id[0]! }));
    const memory = memoryQueue(clock, jobs);
    const running = new Map<string, number>();
    let overlap = false;
    for (const job of jobs) {
      memory.handlers.set(job.id, async () => {
        running.set(job.key, (running.get(job.key) ?? 0) + 1);
        if (running.get(job.key)! > 1) overlap = true;
        await Promise.resolve();
        running.set(job.key, running.get(job.key)! - 1);
        return 'ok';
      });
    }
    const worker = createWorker({
      queue: memory.queue,
      clock,
      timers: clock,
      concurrency: 4,
      prefetch: 4,
      fairness: { keyOf: (job) => job.key, perKey: 1 },
      retry: policy,
      budgetMs: 10_000,
    });
    expect(await worker.drain()).toBe(5);
    expect(overlap).toBe(false);
    const starts = memory.log.filter((line) => line.startsWith('start')).map((line) => line.slice(6));
    expect(starts.filter((id) => id.startsWith('a'))).toEqual(['a1', 'a2', 'a3']);
    expect(starts.filter((id) => id.startsWith('b'))).toEqual(['b1', 'b2']);
  });

  it('drains what is due when it is called, not what a claim begun before it saw', async () => {
    const clock = fakeClock();
    const memory = memoryQueue(clock, [{ id: 'later', key: 'tenant-a' }]);
    // The job falls due only once the clock moves; a claim the loop begins before that finds nothing.
    memory.queue.release([{ id: 'later', key: 'tenant-a' }], new Date(clock.now().getTime() + 60_000));
    const claim = memory.queue.claim.bind(memory.queue);
    let releaseClaim!: () => void;
    const claimHeld = new Promise<void>((resolve) => (releaseClaim = resolve));
    let claims = 0;
    memory.queue.claim = async (request) => {
      const found = await claim(request);
      // The loop's first claim looked before the clock moved, and answers after.
      if (++claims === 1) await claimHeld;
      return found;
    };
    const worker = createWorker({
      queue: memory.queue,
      clock,
      timers: clock,
      concurrency: 1,
      retry: policy,
      budgetMs: 10_000,
    });
    worker.start();
    await eventuallySync(() => claims === 1);
    clock.advance(60_000);
    const drained = worker.drain();
    releaseClaim();
    expect(await drained).toBe(1);
    expect(memory.settlements.get('later')?.kind).toBe('done');
    await worker.stop();
  });
});

/** Lets queued promise reactions run until `condition` holds (no timers: the clock is fake). */
async function eventuallySync(condition: () => boolean) {
  for (let turn = 0; turn < 1000; turn++) {
    if (condition()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error('condition never held');
}
