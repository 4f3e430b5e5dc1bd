import pRetry from 'p-retry';
import type pg from 'pg';

export interface ChannelHandlers {
  /** Every notification on the channel, with its payload ('' when it has none). */
  onNotification(payload: string): void;
  /**
   * After the connection was lost and listening started again: what was notified in between is lost,
   * so this is where a listener catches up (re-reads what the notifications would have said).
   */
  onReconnect?(): void;
  /** A lost connection or a failed attempt to listen again (each is retried); a warning by default. */
  onError?(error: Error): void;
}

export interface ChannelListener {
  /** Stops listening and any retry; the connection is closed, not returned to the pool. */
  close(): void;
}

/** Between two attempts to listen again: doubling from the first, capped, each spread by up to 2x. */
export interface ReconnectBackoff {
  minMs: number;
  maxMs: number;
}

const DEFAULT_BACKOFF: ReconnectBackoff = { minMs: 250, maxMs: 5000 };

/**
 * LISTEN on one dedicated connection of `pool` for as long as it is open. A lost connection (a
 * restart, a failover, a terminated backend) is replaced: attempts are retried with exponential backoff
 * and jitter (so a fleet does not reconnect in lockstep) until one listens again or `close` is called,
 * however long the database refuses connections. The first attempt is not retried: a process that
 * cannot listen at startup fails there.
 */
export async function listenToChannel(
  pool: pg.Pool,
  channel: string,
  handlers: ChannelHandlers,
  backoff: ReconnectBackoff = DEFAULT_BACKOFF,
): Promise<ChannelListener> {
  const onError =
    handlers.onError ??
    ((error: Error) => console.warn(`postgres: listening on ${channel}: ${error.message}`));
  const stopped = new AbortController();
  let current: pg.PoolClient | undefined;

  const listen = async () => {
    const client = await pool.connect();
    client.on('notification', (message) => {
      if (message.channel === channel) handlers.onNotification(message.payload ?? '');
    });
    // A client may report more than one error (the server's termination, then the socket's end), or
    // one after it was replaced or closed: only the first error of the current connection counts.
    client.on('error', (error) => {
      if (current !== client) return;
      current = undefined;
      client.release(true);
      onError(error);
      reconnect();
    });
    try {
      await client.query(`listen ${channel}`);
    } catch (error) {
      client.release(true);
      throw error;
    }
    if (stopped.signal.aborted) {
      client.release(true);
      return;
    }
    current = client;
  };

  const reconnect = () => {
    if (stopped.signal.aborted) return;
    void pRetry(
      // p-retry gives up on a TypeError; here nothing is given up until the listener is closed.
      () =>
        listen().catch((error: unknown) => {
          throw error instanceof TypeError ? new Error(error.message, { cause: error }) : error;
        }),
      {
        retries: Infinity,
        minTimeout: backoff.minMs,
        maxTimeout: backoff.maxMs,
        factor: 2,
        randomize: true,
        signal: stopped.signal,
        onFailedAttempt: ({ error }) => onError(error),
      },
    ).then(
      () => {
        if (!stopped.signal.aborted) handlers.onReconnect?.();
      },
      // Only a close ends the retries.
      () => undefined,
    );
  };

  await listen();
  return {
    close() {
      stopped.abort();
      const client = current;
      current = undefined;
      // Destroyed rather than released: a pooled connection must not go on listening.
      client?.release(true);
    },
  };
}
