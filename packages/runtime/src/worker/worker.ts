import { systemTimers, type Clock, type Timers } from '../clock';
import { watchQueue, workerItems, workerItemSeconds } from '../metrics';
import { claimRoom, heldPerKey, pickStartable, unlimitedFairness, type FairnessPolicy } from './fairness';
import { fitsLease, idleWaitMs } from './lease';
import { nextAttempt, retryDelayMs, type Failure, type RetryPolicy } from './retry';

/** What a claim may take: `limit` items, leaving what this worker already holds per key (`held`) in the count. */
export interface ClaimRequest {
  limit: number;
  held: ReadonlyMap<string, number>;
}

/**
 * What the worker decided about an item that ran: done, tried again at `at`, or not (its attempts ran
 * out, or its failure is final). `result` is what `run` returned; none when it threw.
 */
export type Settlement<Result> =
  | { kind: 'done'; result: Result }
  | { kind: 'retry'; at: Date; error: unknown; result: Result | undefined }
  | { kind: 'exhausted' | 'not_retryable'; error: unknown; result: Result | undefined };

/**
 * A leased queue in Postgres, as the worker sees it: the queue owns its table and statements (claims
 * are guarded by a lease and a claim token), the worker owns the loop.
 */
export interface WorkQueue<Item, Result = void> {
  /** Its name in metrics (the `queue` label) and logs. */
  readonly name: string;
  /** Leases up to `limit` due items to this worker (none of another's, none past its lease). */
  claim(request: ClaimRequest): Promise<Item[]>;
  /**
   * Runs one item. `signal` aborts when its time budget runs out or the worker stops: the item has been
   * handed back by then, and whatever it records must be guarded by its claim.
   */
  run(item: Item, signal: AbortSignal): Promise<Result>;
  /** A result that is a failure (an HTTP 500), for the retry policy; undefined when the item is done. */
  failureOf?(result: Result, now: Date): Failure | undefined;
  /** Retries spent on the item before this attempt, and when it first failed, as the queue stores them. */
  history?(item: Item): { retriesDone: number; firstFailureAt?: Date | null };
  /** Stores the settlement (under the item's claim); runs once its slot is free. */
  settle(item: Item, settlement: Settlement<Result>): Promise<void>;
  /** Hands items back under this worker's claim: due again at `until`, or at once. */
  release(items: readonly Item[], until?: Date): Promise<void>;
  /** When the item's lease ends: one with less than its budget left is handed back, not started. */
  leaseEndOf?(item: Item): Date;
  /** When the next item falls due (or a lease another worker holds runs out); the idle worker sleeps till then. */
  nextDue?(): Promise<Date | null | undefined>;
  /** Depth and lateness for the queue gauges, read at scrape time. */
  measure?(): Promise<{ depth: number; latenessSeconds: number }>;
}

export interface WorkerOptions<Item, Result> {
  queue: WorkQueue<Item, Result>;
  clock: Clock;
  timers?: Timers;
  /** Items running at once. */
  concurrency: number;
  /** Items claimed ahead of free slots (0 by default: a claim takes only what can start). */
  prefetch?: number;
  fairness?: FairnessPolicy<Item>;
  retry: RetryPolicy;
  /** How long one item may run; past it its signal aborts, its slot is free and it is handed back. */
  budgetMs: number;
  /** How long `stop` waits for items under way before it aborts them and hands them back. */
  drainMs?: number;
  /** Longest idle sleep: a safety net for a missed wake-up. */
  pollMs?: number;
  /** Runs before each pass of the running loop: `poll` when the idle sleep ran out, `wake` otherwise. */
  beforePass?: (reason: 'wake' | 'poll') => Promise<void>;
  onError?: (error: unknown) => void;
  /** Jitter's randomness (tests fix it). */
  random?: () => number;
}

export interface Worker<Item> {
  /** Runs every item due now until none is left (tests and benchmarks); returns how many were settled. */
  drain(): Promise<number>;
  /** Runs in the background: on `wake`, when items end, and when the next falls due. */
  start(): void;
  /** Items may be due: look now. */
  wake(): void;
  /** Takes claimed items that have not started out of the worker (their lease stays), e.g. a gone endpoint's. */
  withdraw(predicate: (item: Item) => boolean): Item[];
  /**
   * Stops claiming, hands back what waits, waits up to `drainMs` for items under way, then aborts them
   * and hands them back too; resolves once every outcome and hand-back is stored.
   */
  stop(): Promise<void>;
}

/** The reason a running item's signal aborts with. */
export class WorkAborted extends Error {
  override name = 'WorkAborted';
  constructor(readonly why: 'budget' | 'stopping') {
    super(why === 'budget' ? 'The item ran past its time budget' : 'The worker is stopping');
  }
}

interface Running<Item> {
  item: Item;
  key: string;
  controller: AbortController;
  startedAt: number;
  /** Its slot was freed early (budget or stop); whatever it ends with is ignored. */
  abandoned: boolean;
  done: Promise<void>;
}

/**
 * The one worker loop behind every leased Postgres queue: claim with a lease, run each item under a time
 * budget in a bounded number of slots, fair per key, settle each outcome by the retry policy, hand back
 * what fails or is abandoned, drain on stop. The queue (SQL) and the policies (data) are its inputs; the
 * pure parts live in fairness.ts, lease.ts and retry.ts.
 */
export function createWorker<Item, Result = void>(options: WorkerOptions<Item, Result>): Worker<Item> {
  const { queue, clock } = options;
  const timers = options.timers ?? systemTimers;
  const fairness = options.fairness ?? unlimitedFairness<Item>();
  const concurrency = Math.max(1, options.concurrency);
  const prefetch = Math.max(0, options.prefetch ?? 0);
  const pollMs = options.pollMs ?? 5000;
  const drainMs = options.drainMs ?? 5000;
  const random = options.random ?? Math.random;
  const onError = options.onError ?? ((error) => console.error(`worker ${queue.name}:`, error));
  const sleep = (ms: number) => new Promise<void>((resolve) => timers.after(ms, resolve));

  const running = new Set<Running<Item>>();
  const runningPerKey = new Map<string, number>();
  /** Claimed and not started, oldest claim first. */
  const waiting: Item[] = [];
  /** Claimed items whose lease ran too short while they waited: handed back by the next fill. */
  const stale: Item[] = [];
  /** Settlements and hand-backs being stored. */
  const storing = new Set<Promise<void>>();
  let settled = 0;
  let stopping = false;
  /** Resolves the next time a slot is freed (an item ended, or was abandoned). */
  let slotFreed!: () => void;
  let freed = new Promise<void>((resolve) => (slotFreed = resolve));

  const bump = (key: string, by: number) => {
    const value = (runningPerKey.get(key) ?? 0) + by;
    if (value > 0) runningPerKey.set(key, value);
    else runningPerKey.delete(key);
  };
  const track = (work: Promise<void>) => {
    const tracked: Promise<void> = work.catch(onError).finally(() => storing.delete(tracked));
    storing.add(tracked);
  };

  function decide(item: Item, failure: Failure, result: Result | undefined): Settlement<Result> {
    const history = queue.history?.(item) ?? { retriesDone: 0 };
    const decision = nextAttempt(options.retry, { ...failure, ...history }, clock.now(), random);
    return decision.kind === 'retry'
      ? { kind: 'retry', at: decision.at, error: failure.error, result }
      : { kind: decision.kind, error: failure.error, result };
  }

  async function outcomeOf(entry: Running<Item>): Promise<Settlement<Result>> {
    try {
      const result = await queue.run(entry.item, entry.controller.signal);
      const failure = queue.failureOf?.(result, clock.now());
      return failure ? decide(entry.item, failure, result) : { kind: 'done', result };
    } catch (error) {
      return decide(entry.item, { error }, undefined);
    }
  }

  /** Frees the item's slot; the next waiting items take it at once, and the loop claims more. */
  function free(entry: Running<Item>) {
    running.delete(entry);
    bump(entry.key, -1);
    workerItemSeconds.observe({ queue: queue.name }, (performance.now() - entry.startedAt) / 1000);
    const wasFreed = slotFreed;
    freed = new Promise<void>((resolve) => (slotFreed = resolve));
    wasFreed();
    startWaiting();
    if (loop) setImmediate(wake);
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
    entry.done = outcomeOf(entry).then((settlement) => {
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
    });
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
    let until: Date | undefined;
    if (cause === 'budget') {
      const retriesDone = queue.history?.(entry.item).retriesDone ?? 0;
      until = new Date(clock.now().getTime() + (retryDelayMs(options.retry, retriesDone, random) ?? 0));
    }
    track(queue.release([entry.item], until));
  }

  /** Starts waiting items while slots are free, fairly per key; a lease too short to run in is set aside. */
  function startWaiting(): number {
    let started = 0;
    while (!stopping && running.size < concurrency) {
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

  let claiming: Promise<number> | undefined;
  /** Starts what waits, then claims until the slots and the prefetch are full; returns how many started. */
  function fill(): Promise<number> {
    if (claiming) return claiming;
    const current = (async () => {
      // Never synchronous to the end, so that `claiming` is cleared only after it was set.
      await Promise.resolve();
      try {
        let started = startWaiting();
        for (;;) {
          const limit = stopping
            ? 0
            : claimRoom({ concurrency, prefetch, running: running.size, waiting: waiting.length });
          if (limit <= 0) break;
          const claimed = await queue.claim({ limit, held: heldPerKey(runningPerKey, waiting, fairness) });
          if (claimed.length === 0) break;
          waiting.push(...claimed);
          started += startWaiting();
        }
        if (stale.length > 0) await queue.release(stale.splice(0));
        return started;
      } finally {
        claiming = undefined;
      }
    })();
    claiming = current;
    return current;
  }

  async function drain(): Promise<number> {
    const before = settled;
    while (!stopping) {
      const started = await fill();
      if (started === 0 && running.size === 0 && waiting.length === 0) {
        if (storing.size === 0) break;
        await Promise.allSettled([...storing]);
        continue;
      }
      if (running.size > 0) await freed;
    }
    return settled - before;
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
    const wait = running.size > 0 ? pollMs : idleWaitMs(await queue.nextDue?.(), clock.now(), pollMs);
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
    withdraw(predicate) {
      const taken = waiting.filter(predicate);
      for (const item of taken) waiting.splice(waiting.indexOf(item), 1);
      return taken;
    },
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
      unwatch?.();
      wakeUp?.();
      await loop;
      await claiming?.catch(() => undefined);
      // What waited goes back at once: another worker need not wait for the leases to run out.
      const unstarted = [...waiting.splice(0), ...stale.splice(0)];
      if (unstarted.length > 0) await queue.release(unstarted).catch(onError);
      if (running.size > 0) {
        let cancel = () => {};
        await Promise.race([
          Promise.allSettled([...running].map((entry) => entry.done)),
          new Promise<void>((resolve) => (cancel = timers.after(drainMs, resolve))),
        ]);
        cancel();
      }
      for (const entry of [...running]) abandon(entry, 'stopping');
      while (storing.size > 0) await Promise.allSettled([...storing]);
    },
  };
}
