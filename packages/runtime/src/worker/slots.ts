import type { Timers } from '../clock';
import { workerItems, workerItemSeconds } from '../metrics';
import { heldPerKey, pickStartable, unlimitedFairness } from './fairness';
import { fitsLease } from './lease';
import { nextAttempt, retryDelayMs, type Failure } from './retry';
import { WorkAborted, type Settlement, type WorkerOptions, type WorkQueue } from './work-queue';

interface Running<Item> {
  item: Item;
  key: string;
  controller: AbortController;
  startedAt: number;
  /** Its slot was freed early (budget or stop); whatever it ends with is ignored. */
  abandoned: boolean;
  done: Promise<void>;
}

/** Runs one item and judges its outcome by the retry policy: done, retried at, or given up. */
async function settlementOf<Item, Result>(
  queue: WorkQueue<Item, Result>,
  options: Pick<WorkerOptions<Item, Result>, 'retry' | 'clock'> & { random: () => number },
  item: Item,
  signal: AbortSignal,
): Promise<Settlement<Result>> {
  const decide = (failure: Failure, result: Result | undefined): Settlement<Result> => {
    const history = queue.history?.(item) ?? { retriesDone: 0 };
    const decision = nextAttempt(
      options.retry,
      { ...failure, ...history },
      options.clock.now(),
      options.random,
    );
    return decision.kind === 'retry'
      ? { kind: 'retry', at: decision.at, error: failure.error, result }
      : { kind: decision.kind, error: failure.error, result };
  };
  try {
    const result = await queue.run(item, signal);
    const failure = queue.failureOf?.(result, options.clock.now());
    return failure ? decide(failure, result) : { kind: 'done', result };
  } catch (error) {
    return decide({ error }, undefined);
  }
}

/** A count per key, with no entry for a key at zero. */
function addToCount(counts: Map<string, number>, key: string, by: number) {
  const value = (counts.get(key) ?? 0) + by;
  if (value > 0) counts.set(key, value);
  else counts.delete(key);
}

/** When an item handed back after its budget ran out is due again: after its retry delay. */
function retryAt<Item, Result>(
  options: Pick<WorkerOptions<Item, Result>, 'queue' | 'retry' | 'clock'> & { random: () => number },
  item: Item,
): Date {
  const retriesDone = options.queue.history?.(item).retriesDone ?? 0;
  return new Date(
    options.clock.now().getTime() + (retryDelayMs(options.retry, retriesDone, options.random) ?? 0),
  );
}

/**
 * A worker's items: the claimed ones waiting for a slot, the ones running (each under its time budget,
 * fair per key), and the settlements and hand-backs being stored. `onFree` is called whenever an item
 * leaves its slot.
 */
export function createSlots<Item, Result>(
  options: WorkerOptions<Item, Result> & {
    timers: Timers;
    concurrency: number;
    onError: (error: unknown) => void;
  },
  onFree: () => void,
) {
  const { queue, clock, timers, concurrency, onError } = options;
  const fairness = options.fairness ?? unlimitedFairness<Item>();
  const random = options.random ?? Math.random;

  const running = new Set<Running<Item>>();
  const runningPerKey = new Map<string, number>();
  /** Claimed and not started, oldest claim first. */
  const waiting: Item[] = [];
  /** Claimed items whose lease ran too short while they waited: handed back by the next fill. */
  const stale: Item[] = [];
  /** Settlements and hand-backs being stored. */
  const storing = new Set<Promise<void>>();
  let settled = 0;
  let closed = false;
  /** Resolves the next time a slot is freed (an item ended, or was abandoned). */
  let slotFreed!: () => void;
  let freed = new Promise<void>((resolve) => (slotFreed = resolve));

  const bump = (key: string, by: number) => addToCount(runningPerKey, key, by);
  const track = (work: Promise<void>) => {
    const tracked: Promise<void> = work.catch(onError).finally(() => storing.delete(tracked));
    storing.add(tracked);
  };

  /** Frees the item's slot; the next waiting items take it at once. */
  function free(entry: Running<Item>) {
    running.delete(entry);
    bump(entry.key, -1);
    workerItemSeconds.observe({ queue: queue.name }, (performance.now() - entry.startedAt) / 1000);
    const wasFreed = slotFreed;
    freed = new Promise<void>((resolve) => (slotFreed = resolve));
    wasFreed();
    startWaiting();
    onFree();
  }

  function launch(item: Item) {
    const entry: Running<Item> = {
      item,
      key: fairness.keyOf(item),
      controller: new AbortController(),
      startedAt: performance.now(),
      abandoned: false,
      done: Promise.resolve(),
    };
    bump(entry.key, 1);
    running.add(entry);
    const cancelBudget = timers.after(options.budgetMs, () => abandon(entry, 'budget'));
    entry.done = settlementOf(queue, { ...options, random }, item, entry.controller.signal).then(
      (settlement) => {
        cancelBudget();
        if (entry.abandoned) return;
        workerItems.inc({
          queue: queue.name,
          outcome: settlement.kind === 'retry' ? 'retried' : settlement.kind,
        });
        // Settled before the slot is freed: what the settlement withdraws (a gone endpoint's waiting
        // items) must not start in it.
        track(queue.settle(item, settlement).then(() => void (settled += 1)));
        free(entry);
      },
    );
  }

  /**
   * Gives up on a running item: its signal aborts, its slot is free, and it is handed back — after its
   * retry delay when it ran past its budget (it may be what is wrong), at once when the worker stops.
   */
  function abandon(entry: Running<Item>, cause: 'budget' | 'stopping') {
    if (entry.abandoned || !running.has(entry)) return;
    entry.abandoned = true;
    entry.controller.abort(new WorkAborted(cause));
    free(entry);
    workerItems.inc({ queue: queue.name, outcome: cause === 'budget' ? 'timed_out' : 'released' });
    track(
      queue.release(
        [entry.item],
        cause === 'budget' ? retryAt({ ...options, random }, entry.item) : undefined,
      ),
    );
  }

  /** Starts waiting items while slots are free, fairly per key; a lease too short to run in is set aside. */
  function startWaiting(): number {
    let started = 0;
    while (!closed && running.size < concurrency) {
      const picked = pickStartable(waiting, runningPerKey, concurrency - running.size, fairness);
      if (picked.length === 0) break;
      const items = picked.map((index) => waiting[index]!);
      for (const index of picked.toReversed()) waiting.splice(index, 1);
      let setAside = false;
      for (const item of items) {
        if (queue.leaseEndOf && !fitsLease(queue.leaseEndOf(item), clock.now(), options.budgetMs)) {
          stale.push(item);
          setAside = true;
          continue;
        }
        launch(item);
        started += 1;
      }
      // Only an item set aside can leave a slot that another waiting item may take.
      if (!setAside) break;
    }
    return started;
  }

  return {
    running: () => running.size,
    waiting: () => waiting.length,
    storing: () => storing.size,
    /** Items settled since the worker began. */
    settled: () => settled,
    /** Per key, what this worker holds (running and waiting): what a claim must leave for others. */
    held: () => heldPerKey(runningPerKey, waiting, fairness),
    /** Claimed items join the waiting ones; returns how many of them started at once. */
    add(items: readonly Item[]) {
      waiting.push(...items);
      return startWaiting();
    },
    startWaiting,
    takeStale: () => stale.splice(0),
    takeUnstarted: () => [...waiting.splice(0), ...stale.splice(0)],
    withdraw(predicate: (item: Item) => boolean) {
      const taken = waiting.filter(predicate);
      for (const item of taken) waiting.splice(waiting.indexOf(item), 1);
      return taken;
    },
    nextFree: () => freed,
    allDone: () => Promise.allSettled([...running].map((entry) => entry.done)),
    async storedAll() {
      while (storing.size > 0) await Promise.allSettled([...storing]);
    },
    /** Nothing more starts. */
    close() {
      closed = true;
    },
    /** Hands every running item back at once (the worker is stopping). */
    abandonAll() {
      for (const entry of [...running]) abandon(entry, 'stopping');
    },
  };
}
