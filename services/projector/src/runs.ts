/**
 * Splits events into maximal runs of one type, in log order. A projection applies each run with one
 * multi-row statement, so a bulk import of 1,000 leads is one insert while the order of creates,
 * updates and deletes is kept.
 */
export function runsByType<E extends { type: string }>(events: readonly E[]): E[][] {
  const runs: E[][] = [];
  for (const event of events) {
    const last = runs.at(-1);
    if (last && last[0]!.type === event.type) last.push(event);
    else runs.push([event]);
  }
  return runs;
}
