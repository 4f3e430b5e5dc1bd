import type pg from 'pg';
import { listenToChannel, type ReconnectBackoff } from './db/listen';

/** The channel the projector notifies after each committed batch. */
export const PROGRESS_CHANNEL = 'leadline_projection_progress';

export interface PartitionProgress {
  topic: string;
  partition: number;
  /** The offset of the next record to apply: every record before it is in the read models. */
  next_offset: string;
}

export interface ProjectionProgress {
  /** Resolves true once every record before `nextOffset` of the partition is projected, false on timeout. */
  waitFor(topic: string, partition: number, nextOffset: bigint, timeoutMs: number): Promise<boolean>;
  /** Calls `listener` with every batch of progress the projector announces; returns the unsubscribe. */
  subscribe(listener: (progress: PartitionProgress[]) => void): () => void;
  close(): Promise<void>;
}

interface Waiter {
  key: string;
  nextOffset: bigint;
  resolve: (reached: boolean) => void;
  timer: NodeJS.Timeout;
}

const POLL_INTERVAL_MS = 250;

export interface ProjectionProgressOptions {
  /** A lost listening connection, or a failed attempt to listen again; a warning by default. */
  onListenerError?: (error: Error) => void;
  reconnectBackoff?: ReconnectBackoff;
}

/**
 * Tracks the projector's checkpoints from its NOTIFY messages, so a command can wait for the read
 * models to catch up without polling the database per request. A slow poll while anyone waits covers
 * notifications lost to a reconnect and the schema swap of a `rebuild`.
 */
export async function createProjectionProgress(
  pool: pg.Pool,
  options: ProjectionProgressOptions = {},
): Promise<ProjectionProgress> {
  const reached = new Map<string, bigint>();
  const waiters = new Set<Waiter>();
  const listeners = new Set<(progress: PartitionProgress[]) => void>();
  const keyOf = (topic: string, partition: number) => `${topic}\u0000${partition}`;
  let poller: NodeJS.Timeout | undefined;

  const record = (progress: PartitionProgress) => {
    const key = keyOf(progress.topic, progress.partition);
    const offset = BigInt(progress.next_offset);
    if ((reached.get(key) ?? -1n) < offset) reached.set(key, offset);
    for (const waiter of waiters) {
      if (waiter.key === key && offset >= waiter.nextOffset) settle(waiter, true);
    }
  };

  const announce = (progress: PartitionProgress[]) => {
    progress.forEach(record);
    for (const listener of listeners) listener(progress);
  };

  const settle = (waiter: Waiter, value: boolean) => {
    clearTimeout(waiter.timer);
    waiters.delete(waiter);
    waiter.resolve(value);
    if (waiters.size === 0 && poller) {
      clearInterval(poller);
      poller = undefined;
    }
  };

  const readCheckpoints = async () =>
    (await pool.query<PartitionProgress>('select topic, partition, next_offset from projection_checkpoints'))
      .rows;
  const refresh = async () => (await readCheckpoints()).forEach(record);

  const onError =
    options.onListenerError ??
    ((error: Error) => console.warn(`projection progress: listener: ${error.message}`));
  const channel = await listenToChannel(
    pool,
    PROGRESS_CHANNEL,
    {
      onNotification: (payload) => {
        if (payload) announce(JSON.parse(payload) as PartitionProgress[]);
      },
      // What was announced while nobody listened is announced again from the checkpoints, so live
      // updates catch up at once rather than at the projector's next batch.
      onReconnect: () => void readCheckpoints().then(announce).catch(onError),
      onError,
    },
    options.reconnectBackoff,
  );
  await refresh();

  return {
    async waitFor(topic, partition, nextOffset, timeoutMs) {
      const key = keyOf(topic, partition);
      if ((reached.get(key) ?? 0n) >= nextOffset) return true;
      return new Promise<boolean>((resolve) => {
        const waiter: Waiter = {
          key,
          nextOffset,
          resolve,
          timer: setTimeout(() => settle(waiter, false), timeoutMs),
        };
        waiters.add(waiter);
        poller ??= setInterval(() => void refresh().catch(() => undefined), POLL_INTERVAL_MS);
      });
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    async close() {
      channel.close();
      listeners.clear();
      for (const waiter of waiters) settle(waiter, false);
    },
  };
}
