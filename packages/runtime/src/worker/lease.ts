/**
 * Lease arithmetic. A claimed item is leased to one worker until its lease ends; past it any worker may
 * claim it again (its worker died). An item runs within its time budget, so one that starts with at least
 * its budget left on its lease ends (or is handed back) before another worker can take it.
 */

/** Whether an item leased until `leaseEnd` may start now: its whole budget fits in what is left. */
export const fitsLease = (leaseEnd: Date, now: Date, budgetMs: number) =>
  leaseEnd.getTime() - now.getTime() >= budgetMs;

/**
 * How long an idle worker sleeps, from when its queue's next item falls due (or a lease it waits on
 * runs out): until then, at most `pollMs`. Something due already that the claim did not get is leased
 * elsewhere and may be handed back any moment: look again shortly.
 */
export function idleWaitMs(
  nextDue: Date | null | undefined,
  now: Date,
  pollMs: number,
  soonMs = 200,
): number {
  if (!nextDue) return pollMs;
  const dueIn = nextDue.getTime() - now.getTime();
  if (dueIn <= 0) return Math.min(soonMs, pollMs);
  return Math.min(pollMs, dueIn);
}
