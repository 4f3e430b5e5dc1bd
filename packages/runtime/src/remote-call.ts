/**
 * One shape for every call to a system we do not run (Twilio, partner webhooks, OpenAI, URL fetches,
 * media downloads): a remote call never runs inside a database transaction or under a lock, because
 * a slow or silent peer would then hold connections and block every writer that needs the same lock.
 *
 *   1. claim: a short transaction that leases the work (or marks it in flight) and commits;
 *   2. call: the remote call alone, bounded by a timeout, with nothing open in the database;
 *   3. record: a short transaction that stores the outcome, guarded by the claim (a row whose lease
 *      was lost to another instance is not recorded twice).
 *
 * For effects that must happen at most once (an SMS), the claim marks the work in flight before the
 * call and nothing ever calls again for it; an unknown outcome (a timeout, a crash) is settled later
 * from what the peer reports, never by calling again. For effects that may repeat (a webhook the
 * receiver deduplicates), a lost lease simply lets another instance call again.
 */
export interface RemoteCall<Claim, Result> {
  /** Short transaction; undefined when there is nothing (left) to do. */
  claim(): Promise<Claim | undefined>;
  /** The call, with no transaction or lock open; `signal` aborts it when the timeout passes. */
  call(claim: Claim, signal: AbortSignal): Promise<Result>;
  /** Short transaction storing the outcome; `error` is a RemoteCallTimeout past the timeout. */
  record(claim: Claim, outcome: RemoteOutcome<Result>): Promise<void>;
}

export type RemoteOutcome<Result> = { ok: true; value: Result } | { ok: false; error: unknown };

/** The remote call did not answer within its bound; whether it took effect is unknown. */
export class RemoteCallTimeout extends Error {
  constructor(
    readonly what: string,
    readonly timeoutMs: number,
  ) {
    super(`${what}: no answer within ${timeoutMs} ms`);
    this.name = 'RemoteCallTimeout';
  }
}

/**
 * Runs `call` with an abort signal and a deadline: past `timeoutMs` it rejects with RemoteCallTimeout
 * (and aborts the call, for clients that honour the signal) instead of waiting on a silent peer.
 */
export async function withTimeout<T>(
  what: string,
  timeoutMs: number,
  call: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new RemoteCallTimeout(what, timeoutMs);
      controller.abort(error);
      reject(error);
    }, timeoutMs);
  });
  try {
    return await Promise.race([call(controller.signal), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Claims, calls and records one unit of remote work. Returns undefined when the claim found nothing,
 * otherwise the outcome that was recorded. An error of `claim` or `record` propagates (the lease runs
 * out and the work is claimed again, or stays in flight until it is settled); the call's own error is
 * an outcome, never thrown.
 */
export async function runRemoteCall<Claim, Result>(
  what: string,
  timeoutMs: number,
  steps: RemoteCall<Claim, Result>,
): Promise<RemoteOutcome<Result> | undefined> {
  const claimed = await steps.claim();
  if (claimed === undefined) return undefined;
  const outcome = await withTimeout(what, timeoutMs, (signal) => steps.call(claimed, signal)).then(
    (value): RemoteOutcome<Result> => ({ ok: true, value }),
    (error: unknown): RemoteOutcome<Result> => ({ ok: false, error }),
  );
  await steps.record(claimed, outcome);
  return outcome;
}

/** The end of a lease taken now for `leaseMs`: another instance may claim the work after it. */
export const leaseUntil = (now: Date, leaseMs: number) => new Date(now.getTime() + leaseMs);
