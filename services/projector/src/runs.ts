/**
 * The most events in one run. Postgres binds at most 65,535 parameters to a statement, and a lead's
 * row has 18 columns: a projector catching up (or a rebuild) fetches up to 4 MB of a partition at
 * once, thousands of one bulk import's creates, and one statement for all of them was refused on every
 * retry, stalling the partition for good.
 */
export const MAX_RUN_LENGTH = 1_000;

/**
 * Splits events into runs of one type, in log order, each at most `MAX_RUN_LENGTH` long. A projection
 * applies each run with one multi-row statement, so a bulk import of 1,000 leads is one insert while
 * the order of creates, updates and deletes is kept.
 */
export function runsByType<E extends { type: string }>(events: readonly E[]): E[][] {
  const runs: E[][] = [];
  for (const event of events) {
    const last = runs.at(-1);
    if (last && last[0]!.type === event.type && last.length < MAX_RUN_LENGTH) last.push(event);
    else runs.push([event]);
  }
  return runs;
}
