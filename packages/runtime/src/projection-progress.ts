import type pg from 'pg';

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

/**
 * Tracks the projector's checkpoints from its NOTIFY messages, so a command can wait for the read
 * models to catch up without polling the database per request. A slow poll while anyone waits covers
 * notifications lost to a reconnect and the schema swap of a `rebuild`.
 */
export async function createProjectionProgress(pool: pg.Pool): Promise<ProjectionProgress> {
  const reached = new Map<string, bigint>();
  const waiters = new Set<Waiter>();
  const listeners = new Set<(progress: PartitionProgress[]) => void>();
  const keyOf = (topic: string, partition: number) => `${topic}\u0000${partition}`;
  let listener: pg.PoolClient | undefined;
  let closed = false;
  let poller: NodeJS.Timeout | undefined;

  const record = (progress: PartitionProgress) => {
    const key = keyOf(progress.topic, progress.partition);
    const offset = BigInt(progress.next_offset);
    if ((reached.get(key) ?? -1n) < offset) reached.set(key, offset);
    for (const waiter of waiters) {
      if (waiter.key === key && offset >= waiter.nextOffset) settle(waiter, true);
    }
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

  const refresh = async () => {
    const { rows } = await pool.query<PartitionProgress>(
      'select topic, partition, next_offset from projection_checkpoints',
    );
    rows.forEach(record);
  };

  const listen = async () => {
    const client = await pool.connect();
    listener = client;
    client.on('notification', (message) => {
      if (message.channel !== PROGRESS_CHANNEL || !message.payload) return;
      const progress = JSON.parse(message.payload) as PartitionProgress[];
      progress.forEach(record);
      for (const listener of listeners) listener(progress);
    });
    // A client may report more than one error (the server's termination, then the socket's end), or
    // one after `close` released it: only the first error of the current listener releases it, never
    // the connection that replaced it.
    client.on('error', () => {
      if (listener !== client) return;
      listener = undefined;
      client.release(true);
      if (!closed) setTimeout(() => void listen().catch(() => undefined), POLL_INTERVAL_MS);
    });
    await client.query(`listen ${PROGRESS_CHANNEL}`);
  };

  await listen();
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
      closed = true;
      listeners.clear();
      for (const waiter of waiters) settle(waiter, false);
      const client = listener;
      listener = undefined;
      client?.release();
    },
  };
}
