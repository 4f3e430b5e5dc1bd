import type { Clock, Timers } from '../clock';
import type { FairnessPolicy } from './fairness';
import type { Failure, RetryPolicy } from './retry';

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
  /** Stores the settlement (under the item's claim), while its slot already goes to the next item. */
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
  /** Slots free now: how many items could start at once (an item may wait for its next step only if one is). */
  freeSlots(): number;
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
