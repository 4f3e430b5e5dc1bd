import { DomainError, unavailable } from '@leadline/domain';

/**
 * The write path's bound on the event log (`EVENT_LOG_TIMEOUT_MS`): a broker that is down or silent
 * makes a write a 503 within the bound, counted from the write's start, never a hang.
 */

/**
 * One write's time for the event log: its bound counts from the write's start, less the time it spent
 * waiting for the read models (their own bound, `PROJECTION_WAIT_MS`).
 */
export interface EventLogBudget {
  readonly startedAt: number;
  remainingMs(): number;
  excluding<T>(wait: () => Promise<T>): Promise<T>;
  /** Starts the bound again from now. */
  restart(): void;
}

export function eventLogBudget(boundMs: number): EventLogBudget {
  let startedAt = Date.now();
  let excludedMs = 0;
  return {
    get startedAt() {
      return startedAt;
    },
    remainingMs: () => boundMs - (Date.now() - startedAt - excludedMs),
    restart() {
      startedAt = Date.now();
      excludedMs = 0;
    },
    async excluding(wait) {
      const waitStarted = Date.now();
      try {
        return await wait();
      } finally {
        excludedMs += Date.now() - waitStarted;
      }
    },
  };
}

/**
 * A call to Kafka, bounded: a broker that is down or silent is a 503 within the bound, never a hang.
 * `extraMs` is for work that grows with the payload (compressing and sending a bulk import), which a
 * fixed bound would refuse on every retry alike.
 */
async function boundedLogCall<T>(
  eventLogTimeoutMs: number,
  what: string,
  call: () => Promise<T>,
  extraMs = 0,
  budget?: EventLogBudget,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const boundMs = (budget ? budget.remainingMs() : eventLogTimeoutMs) + extraMs;
  // Its time went waiting (for a lock a command stuck on the log held, for a connection): refused
  // now, rather than a whole bound later, so a queue behind an outage drains at once.
  if (boundMs <= 0) {
    throw unavailable('event_log_unavailable', `The event log is unavailable (${what}): no time left`);
  }
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${boundMs} ms`)), boundMs);
  });
  try {
    return await Promise.race([call(), deadline]);
  } catch (error) {
    if (error instanceof DomainError) throw error;
    throw unavailable(
      'event_log_unavailable',
      `The event log is unavailable (${what}): ${(error as Error).message}`,
    );
  } finally {
    clearTimeout(timer);
  }
}

/** Bounded calls to the log, remembering when it last answered one (see the lock stage of `execute`). */
export function eventLogCalls(eventLogTimeoutMs: number) {
  let answeredAt = 0;
  return {
    async fromEventLog<T>(what: string, call: () => Promise<T>, extraMs = 0, budget?: EventLogBudget) {
      const answer = await boundedLogCall(eventLogTimeoutMs, what, call, extraMs, budget);
      answeredAt = Date.now();
      return answer;
    },
    answeredSince: (time: number) => answeredAt >= time,
  };
}
