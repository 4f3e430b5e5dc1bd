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
  /**
   * The connection answered (listening began, or a heartbeat came back): every notification committed
   * before that moment has been delivered. Only with a heartbeat is this called more than once a connection.
   */
  onAlive?(): void;
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
  /**
   * When set, the connection is asked `select 1` this often: a connection that died silently (a
   * network partition sends no error) is then noticed within a few heartbeats and replaced, and
   * `onAlive` says how recent the last proof of delivery is.
   */
  heartbeatMs?: number,
): Promise<ChannelListener> {
  const onError =
    handlers.onError ??
    ((error: Error) => console.warn(`postgres: listening on ${channel}: ${error.message}`));
  const stopped = new AbortController();
  let current: pg.PoolClient | undefined;

  // Only the first loss of the current connection counts: a client may report more than one error
  // (the server's termination, then the socket's end), or one after it was replaced or closed.
  const lose = (client: pg.PoolClient, error: Error) => {
    if (current !== client) return;
    current = undefined;
    client.release(true);
    onError(error);
    reconnect();
  };

  const listen = async () => {
    const client = await pool.connect();
    client.on('notification', (message) => {
      if (message.channel === channel) handlers.onNotification(message.payload ?? '');
    });
    client.on('error', (error) => lose(client, error));
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
    handlers.onAlive?.();
  };

  // The connection whose heartbeat is unanswered: a replaced connection's never holds the next one back.
  let beating: pg.PoolClient | undefined;
  const heartbeat =
    heartbeatMs === undefined
      ? undefined
      : setInterval(() => {
          const client = current;
          if (!client || beating === client) return;
          beating = client;
          const unanswered = setTimeout(
            () => lose(client, new Error(`no answer to a heartbeat in ${4 * heartbeatMs} ms`)),
            4 * heartbeatMs,
          );
          client
            .query('select 1')
            .then(
              () => {
                if (current === client) handlers.onAlive?.();
              },
              (error: unknown) => lose(client, error instanceof Error ? error : new Error(String(error))),
            )
            .finally(() => {
              clearTimeout(unanswered);
              if (beating === client) beating = undefined;
            });
        }, heartbeatMs);
  heartbeat?.unref();

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
      clearInterval(heartbeat);
      const client = current;
      current = undefined;
      // Destroyed rather than released: a pooled connection must not go on listening.
      client?.release(true);
    },
  };
}
