/**
 * Group commit by key: items submitted while a run for their key is in flight wait, and all of them go
 * in the next run, which starts as soon as the current one ends. An item that `conflicts` with one
 * already taken waits for the run after (items that conflict keep their order). A run that fails fails
 * each of its items with its error, and none is tried again here: the run may have had effects (an
 * append that timed out may still land), so a retry is the caller's, decided again against the log.
 */
export function createKeyedBatcher<T, R>(options: {
  keyOf: (item: T) => string;
  conflicts: (a: T, b: T) => boolean;
  maxBatch: number;
  run: (key: string, items: T[]) => Promise<R[]>;
}): (item: T) => Promise<R> {
  const { keyOf, conflicts, maxBatch, run } = options;
  interface Pending {
    item: T;
    resolve: (result: R) => void;
    reject: (error: unknown) => void;
  }
  /** Per key with a run in flight, the items waiting for the next. */
  const waiting = new Map<string, Pending[]>();

  async function settle(key: string, batch: Pending[]) {
    try {
      const results = await run(
        key,
        batch.map((pending) => pending.item),
      );
      batch.forEach((pending, index) => pending.resolve(results[index]!));
    } catch (error) {
      for (const pending of batch) pending.reject(error);
    }
  }

  async function drain(key: string) {
    for (;;) {
      const queue = waiting.get(key)!;
      if (queue.length === 0) return void waiting.delete(key);
      const batch: Pending[] = [];
      const rest: Pending[] = [];
      for (const pending of queue) {
        // One that conflicts with an item left for later waits too, so conflicting items keep their order.
        const fits =
          batch.length < maxBatch &&
          ![...batch, ...rest].some((other) => conflicts(other.item, pending.item));
        (fits ? batch : rest).push(pending);
      }
      waiting.set(key, rest);
      await settle(key, batch);
    }
  }

  return (item) =>
    new Promise<R>((resolve, reject) => {
      const key = keyOf(item);
      const queue = waiting.get(key);
      if (queue) return void queue.push({ item, resolve, reject });
      waiting.set(key, [{ item, resolve, reject }]);
      void drain(key);
    });
}
