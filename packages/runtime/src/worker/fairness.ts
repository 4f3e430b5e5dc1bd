/**
 * Fairness as a policy on the worker rather than code in its loop: items carry a key (the account whose
 * messages must go out one at a time and in order, the webhook whose endpoint may hold only so many
 * slots), and at most `perKey` items of one key run at once. Waiting items start oldest first, so the
 * items of one key start in the order they were claimed.
 */
export interface FairnessPolicy<Item> {
  keyOf(item: Item): string;
  /** Items of one key running at once in this worker; 1 runs a key's items one by one, in order. */
  perKey: number;
}

/** No key holds back another: every item is its own key. */
export const unlimitedFairness = <Item>(): FairnessPolicy<Item> => ({
  keyOf: () => '',
  perKey: Number.POSITIVE_INFINITY,
});

/**
 * Which waiting items start now, by index, oldest first: up to `freeSlots` of them, passing over an
 * item whose key already runs `perKey` items (counting those started here), and every later item of that
 * key with it, so no item of a key overtakes an earlier one.
 */
export function pickStartable<Item>(
  waiting: readonly Item[],
  running: ReadonlyMap<string, number>,
  freeSlots: number,
  policy: FairnessPolicy<Item>,
): number[] {
  const picked: number[] = [];
  const counts = new Map(running);
  const passedOver = new Set<string>();
  for (let index = 0; index < waiting.length && picked.length < freeSlots; index++) {
    const key = policy.keyOf(waiting[index]!);
    const count = counts.get(key) ?? 0;
    if (passedOver.has(key) || count >= policy.perKey) {
      passedOver.add(key);
      continue;
    }
    counts.set(key, count + 1);
    picked.push(index);
  }
  return picked;
}

/** Per key, the items a worker holds: running plus claimed and waiting (what a claim must leave for others). */
export function heldPerKey<Item>(
  running: ReadonlyMap<string, number>,
  waiting: readonly Item[],
  policy: FairnessPolicy<Item>,
): Map<string, number> {
  const held = new Map(running);
  for (const item of waiting) {
    const key = policy.keyOf(item);
    held.set(key, (held.get(key) ?? 0) + 1);
  }
  return held;
}

/**
 * How many items the next claim asks for, or 0 to claim nothing now. The worker claims ahead of its
 * free slots (`prefetch` more), so a slot that frees is taken without a round trip; while items still
 * wait it claims only once a quarter of the room is free, in batches rather than one claim per item
 * that ends.
 */
export function claimRoom(state: {
  concurrency: number;
  prefetch: number;
  running: number;
  waiting: number;
}): number {
  const room = state.concurrency + state.prefetch - state.running - state.waiting;
  if (room <= 0) return 0;
  if (state.waiting > 0 && room < Math.ceil(state.prefetch / 4)) return 0;
  return room;
}
