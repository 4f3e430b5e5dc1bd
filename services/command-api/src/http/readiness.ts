import type { Admin } from 'kafkajs';

/** Under the 1 s most health checkers allow, with room for the answer to travel. */
export const READINESS_BOUND_MS = 800;

/**
 * The readiness checks, or a rejection once `boundMs` has passed: a check left running (a lookup
 * kafkajs keeps retrying, a query queued for a connection) ends on its own bounds, unawaited.
 */
export async function withinReadinessBound<T>(checks: () => Promise<T>, boundMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const running = checks();
  // Its late failure is already answered as "not ready"; nothing else waits for it.
  running.catch(() => undefined);
  try {
    return await Promise.race([
      running,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`readiness checks took over ${boundMs} ms`)), boundMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The event log answers: its end offsets can be read (what every write reads first). */
export const eventLogReadiness = (admin: Admin, topic: () => string) => async () =>
  void (await admin.fetchTopicOffsets(topic()));
