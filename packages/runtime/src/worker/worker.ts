import { systemTimers } from '../clock';
import { watchQueue } from '../metrics';
import { reportFailure } from '../failure-report';
import { claimRoom } from './fairness';
import { idleWaitMs } from './lease';
import { createSlots } from './slots';
import type { Worker, WorkerOptions } from './work-queue';

/**
 * The one worker loop behind every leased Postgres queue: claim with a lease, run each item under a time
 * budget in a bounded number of slots (slots.ts), fair per key, settle each outcome by the retry policy,
 * hand back what fails or is abandoned, drain on stop. The queue (SQL) and the policies (data) are its
 * inputs; the pure parts live in fairness.ts, lease.ts and retry.ts.
 */
export function createWorker<Item, Result = void>(options: WorkerOptions<Item, Result>): Worker<Item> {
  const { queue, clock } = options;
  const timers = options.timers ?? systemTimers;
  const concurrency = Math.max(1, options.concurrency);
  const prefetch = Math.max(0, options.prefetch ?? 0);
  const pollMs = options.pollMs ?? 5000;
  const drainMs = options.drainMs ?? 5000;
  const onError = options.onError ?? reportFailure(`worker ${queue.name}`);
  const sleep = (ms: number) => new Promise<void>((resolve) => timers.after(ms, resolve));
  // An item that ends frees its slot: the next waiting items take it at once, and the loop claims more.
  const slots = createSlots({ ...options, timers, concurrency, onError }, () => {
    if (loop) setImmediate(wake);
  });
  let stopping = false;

  let claiming: Promise<number> | undefined;
  /** Starts what waits, then claims until the slots and the prefetch are full; returns how many started. */
  function fill(): Promise<number> {
    if (claiming) return claiming;
    const current = (async () => {
      // Never synchronous to the end, so that `claiming` is cleared only after it was set.
      await Promise.resolve();
      try {
        let started = slots.startWaiting();
        for (;;) {
          const limit = stopping
            ? 0
            : claimRoom({ concurrency, prefetch, running: slots.running(), waiting: slots.waiting() });
          if (limit <= 0) break;
          const claimed = await queue.claim({ limit, held: slots.held() });
          if (claimed.length === 0) break;
          started += slots.add(claimed);
        }
        const stale = slots.takeStale();
        if (stale.length > 0) await queue.release(stale);
        return started;
      } finally {
        claiming = undefined;
      }
    })();
    claiming = current;
    return current;
  }

  async function drain(): Promise<number> {
    const before = slots.settled();
    // A claim the loop began before this call may have looked before the caller's change (a clock moved,
    // a row written): joining it could end the drain with what is due now unclaimed. Let it end first.
    await claiming?.catch(() => undefined);
    while (!stopping) {
      const started = await fill();
      if (started === 0 && slots.running() === 0 && slots.waiting() === 0) {
        if (slots.storing() === 0) break;
        await slots.storedAll();
        continue;
      }
      if (slots.running() > 0) await slots.nextFree();
    }
    return slots.settled() - before;
  }

  let loop: Promise<void> | undefined;
  let wakeRequested = false;
  let wakeUp: (() => void) | undefined;
  let pollDue = true;
  let unwatch: (() => void) | undefined;

  function wake() {
    wakeRequested = true;
    wakeUp?.();
  }

  async function pass() {
    const reason = pollDue ? 'poll' : 'wake';
    pollDue = false;
    await options.beforePass?.(reason);
    await fill();
    if (wakeRequested) return;
    // While items run, each one's end wakes the loop; the next due time matters only once none does.
    const wait = slots.running() > 0 ? pollMs : idleWaitMs(await queue.nextDue?.(), clock.now(), pollMs);
    if (wakeRequested || stopping) return;
    await new Promise<void>((resolve) => {
      const cancel = timers.after(wait, () => {
        pollDue = true;
        resolve();
      });
      wakeUp = () => {
        cancel();
        resolve();
      };
    });
    wakeUp = undefined;
  }

  return {
    drain,
    wake,
    freeSlots: () => (stopping ? 0 : Math.max(0, concurrency - slots.running())),
    withdraw: (predicate) => slots.withdraw(predicate),
    start() {
      if (loop || stopping) return;
      if (queue.measure) unwatch = watchQueue(queue.name, queue.measure.bind(queue));
      loop = (async () => {
        while (!stopping) {
          wakeRequested = false;
          try {
            await pass();
          } catch (error) {
            onError(error);
            await sleep(Math.min(1000, pollMs));
          }
        }
      })();
    },
    async stop() {
      stopping = true;
      slots.close();
      unwatch?.();
      wakeUp?.();
      await loop;
      await claiming?.catch(() => undefined);
      // What waited goes back at once: another worker need not wait for the leases to run out.
      const unstarted = slots.takeUnstarted();
      if (unstarted.length > 0) await queue.release(unstarted).catch(onError);
      if (slots.running() > 0) {
        let cancel = () => {};
        await Promise.race([
          slots.allDone(),
          new Promise<void>((resolve) => (cancel = timers.after(drainMs, resolve))),
        ]);
        cancel();
      }
      slots.abandonAll();
      await slots.storedAll();
    },
  };
}
